"""Reference solutions of the bundled competitions, one program per slug (`<slug>.py`).

They are data, not modules: `webapp.competitions.bundled` reads them as text, and the tests run each
one as a plain program in a folder holding ./input/ (the public files) and ./submission/.
Nothing imports them.
"""
