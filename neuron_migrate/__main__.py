"""`python -m neuron_migrate` runs the CLI."""

from neuron_migrate.cli import main

if __name__ == "__main__":
    main()
