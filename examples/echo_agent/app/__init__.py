"""echo_agent: an example A2A agent Host for the llamon Playground."""
