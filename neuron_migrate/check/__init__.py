"""`neuron-migrate check`: run a program on the emulated `neuron` device and report what it did.

runner.py starts the user's program in a subprocess (child.py) with the emulator active, collects
the per-process records (the backend's, schema in `neuron_emu.record`, and the child's own,
schema in child.py); records.py merges them; analyze.py turns them into NM9xx findings; gate.py
turns a report into an exit code; terminal.py renders the text report; pytest_plugin.py records
and gates per test.
"""
