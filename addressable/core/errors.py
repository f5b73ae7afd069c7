"""The one exception type the CLI turns into a one-line error and exit code 2."""


class AddressableError(Exception):
    """A problem with the user's input: a bad file, a bad option, a bad rule."""
