"""The new-era G1 manager: its facade, the native ("vLLM") backend and its block pool (issue 7)."""
