SPECS = ()
