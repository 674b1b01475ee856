"""The Responses API: :mod:`.request` builds the request, :mod:`.stream` assembles the
streamed answer."""
