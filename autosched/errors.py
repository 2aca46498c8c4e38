"""The one error type of autosched's public surface, in a module of its own so that every layer
(the database as well as the API) raises it without importing the layers above."""


class AutoschedError(ValueError):
    """A request that cannot be carried out as given; the message says which input and why."""
