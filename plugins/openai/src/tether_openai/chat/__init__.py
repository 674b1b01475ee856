"""The Chat Completions API: :mod:`.request` builds the request, :mod:`.stream` assembles
the streamed answer."""
