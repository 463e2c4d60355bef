"""What a model response costs: the price table (built in, or the user's file) and the
one function every view, the hub and the exports price with (pricing.Table.cost)."""
