"""The bundled example projects, shipped as package data (`llamon_playground.examples`).

Each folder is a real llamon project whose Host is an a2a-sdk server; `llamon-playground up`
with no project serves `echo_agent`.
"""
