"""Dense text as page images: the rendering (``pages``, Pillow, imported only when a page is
drawn) and what a page costs in tokens on each provider's wire (``tokens``)."""
