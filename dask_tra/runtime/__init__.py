"""The Dask layer: the collection protocol, graph emission, placement on workers, plugins and
measurement. The algebra, the implementation algebra and the optimizer import none of it."""
