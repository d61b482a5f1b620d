"""vLLM: `vllm serve`, `python -m vllm.entrypoints.openai.api_server` and the vllm-openai images."""
