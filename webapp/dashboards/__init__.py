"""Live dashboards: Channels consumers and the Plotly pages built on them."""
