"""Conformance: drive real implementations (Dynamo's Rust code, vLLM) beside the model."""
