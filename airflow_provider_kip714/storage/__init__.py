"""Where the provider keeps its files: the data root and its areas."""
