"""Reading files safely, on the standard library only (the status line may import it)."""
