"""The benchmark (`make bench`): the build and the live answers measured on generated input,
beside this machine's floors. Not part of the shipped package; `python -m bench --help`."""
