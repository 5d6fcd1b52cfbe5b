"""schemathesis hooks for scripts/conformance.sh.

The settings (schemathesis.toml) let the check that schema-valid requests
are accepted (`positive_data_acceptance`) take `422 validation_failed` from
the operations whose rules no schema can state. This check holds those 422s
to the rules docs/testing.md names: a schema-valid request refused for any
other field is a rule missing from the description, and fails the run.
"""
import re

import schemathesis

# Per operation, the fields (as the `detail` of a 422 names them, before its
# colon) whose rules depend on what is stored or running, on lists kept
# outside the description, on the magnitude of a Kubernetes quantity, or
# relate one field to another (docs/testing.md, "Conformance run").
_ITEM = r"\[\d+\]"
_APP = [
    # An image reference, a cron expression, an IANA time zone: lists and
    # grammars outside the description; a time zone needs a schedule.
    r"image", r"schedule", r"time_zone",
    rf"(processes{_ITEM}\.)?(schedule|time_zone)",
    # A size's and a volume's magnitude (at most 16 CPU, 64Gi, 1Ti); a
    # volume never shrinks.
    rf"(processes{_ITEM}\.)?size", rf"volumes{_ITEM}\.size",
    # Between fields: processes or the flat fields, names given twice or too
    # long with the app's, a scheduled process's port, max_replicas below
    # replicas, one replica with volumes, a source's fields without a
    # repository, a Dockerfile for a buildpacks build.
    r"processes", rf"processes{_ITEM}\.name",
    rf"(processes{_ITEM}\.)?(port|replicas|max_replicas)",
    rf"env{_ITEM}", rf"env{_ITEM}\.name", rf"domains{_ITEM}",
    rf"volumes{_ITEM}\.(name|mount_path)", r"git_repo", r"build\.dockerfile",
    # What is stored: the secrets an app refers to, the environment's quota.
    rf"env{_ITEM}\.secret(\.name|\.key)?", r"git_secret", r"env", r"volumes",
]
STATE_RULES = {
    # The current password, and a new one that must differ from it.
    "changePassword": [r"current_password", r"new_password"],
    # A quota's magnitude; a namespace the cluster or Berth reserves.
    "createEnvironment": [r"quota\.(cpu|memory|storage|pods|volumes)", r"name"],
    "createApp": _APP,
    "updateApp": _APP,
    # The app's revisions.
    "rollbackApp": [r"revision"],
    # The target environment: another of the same project.
    "promoteApp": [r"environment"],
    # The app's scheduled processes.
    "runApp": [r"process"],
    # The template's variables, and what its apps need of the environment.
    "deployTemplate": [r"env\..*", r"env", r"name"],
    # Whether the app has a source to build.
    "createBuild": [r"git_repo"],
}


@schemathesis.check
def only_documented_rules_refuse_valid_data(ctx, response, case):
    """A schema-valid request refused 422 names a field of the documented
    exclusions of its operation."""
    meta = case.meta
    if response.status_code != 422 or meta is None or not meta.generation.mode.is_positive:
        return None
    operation = case.operation.definition.raw.get("operationId")
    try:
        detail = response.json().get("detail") or ""
    except ValueError:
        detail = ""
    field = detail.split(":", 1)[0]
    if not any(re.fullmatch(rule, field) for rule in STATE_RULES.get(operation, [])):
        raise AssertionError(
            f"{operation} refused schema-valid data for a rule the description could "
            f"state: {detail}")
    return None
