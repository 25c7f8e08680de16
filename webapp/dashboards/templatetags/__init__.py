"""Template tags of the dashboards (the runs leaderboard on a competition page)."""
