"""kvmodel.model — the executable state machines of Dynamo's KV-block management.

Each component is a plain class with its state as fields and one method per operation
of the real Rust code. Quirks (known defects of the real code) are named switches;
the faithful model has all of a component's quirks on, the ideal model none.
"""
