"""Cost-based planning for tensor-relational computations."""
