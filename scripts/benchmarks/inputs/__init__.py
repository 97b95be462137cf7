"""What the benchmark writes or sends: SQLite fixtures and texts, a year's cached history,
the floor of a run's creation run in this process."""
