"""Side-by-side comparisons with other agent dev servers (`scripts/compare-adk`)."""
