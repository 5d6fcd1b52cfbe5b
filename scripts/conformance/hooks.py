"""schemathesis hooks for scripts/conformance.sh.

JSON Schema counts `7.0` as an integer and schemathesis sends such numbers
for `type: integer`; Berth reads an integer only as JSON writes one, `7`
(serde), which no schema keyword can say. The generated bodies carry their
whole numbers as integers.
"""
import schemathesis


def _whole_numbers_as_integers(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers_as_integers(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole_numbers_as_integers(item) for key, item in value.items()}
    return value


@schemathesis.hook
def map_body(context, body):
    return _whole_numbers_as_integers(body)
