"""kvmodel.specs — Z3 encodings of the component transition systems (see the Z3 issue)."""
