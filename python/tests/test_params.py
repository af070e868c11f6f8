"""`params()` is the table `metachron params` prints."""

import metachron
from conftest import cli


def test_params_is_the_clis_table():
    table = metachron.params()
    assert table.column_names == ["name", "unit", "default", "allowed", "meaning"]
    lines = cli("params").stdout.splitlines()
    assert lines[0].split() == table.column_names
    assert len(lines) - 1 == table.num_rows
    for line, row in zip(lines[1:], table.to_pylist()):
        # Columns are aligned with spaces: every field appears in order on its line.
        at = 0
        for field in (row["name"], row["unit"], row["default"], row["allowed"], row["meaning"]):
            k = line.find(field, at)
            assert k >= 0, (field, line)
            at = k + len(field)
