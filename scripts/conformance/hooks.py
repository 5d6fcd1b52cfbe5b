"""schemathesis hooks for scripts/conformance.sh.

The settings (schemathesis.toml) let the check that schema-valid requests
are accepted (`positive_data_acceptance`) take `422 validation_failed` from
the operations whose rules no schema can state. This check holds those 422s
to the rules docs/testing.md names: a schema-valid request refused for any
other field is a rule missing from the description, and fails the run.
"""
import re

import schemathesis

# Per operation, the rules a 422 to schema-valid data may name: each a
# regular expression its `detail` ("field: why") starts with. They depend on
# what is stored or running, on lists and grammars kept outside the
# description, on the magnitude of a Kubernetes quantity, or relate one
# field to another (docs/testing.md, "Conformance run").
_N = r"\[\d+\]"
_APP = [
    # An image reference, a cron expression, an IANA time zone (which also
    # needs a schedule).
    r"image:", rf"(processes{_N}\.)?(schedule|time_zone):",
    # A size's and a volume's magnitude (at most 16 CPU, 64Gi, 1Ti); a
    # volume never shrinks.
    rf"(processes{_N}\.)?size:", rf"volumes{_N}\.size:",
    # Between fields: processes or the flat fields; a process's name given
    # twice or too long with the app's; a scheduled process's port;
    # max_replicas below replicas; one replica with volumes; names, hosts
    # and paths given twice; a source's fields without a repository; a
    # Dockerfile for a buildpacks build; an app without image or source.
    r"processes:", rf"processes{_N}\.name: (is given twice|with the app's name)",
    rf"(processes{_N}\.)?(port|replicas|max_replicas):",
    rf"env{_N}\.name: is given twice", rf"domains{_N}: is given twice",
    rf"volumes{_N}\.(name|mount_path): is given twice",
    r"git_repo: (git_ref, build and git_secret|removing the source)",
    r"build\.dockerfile: a buildpacks build",
    # What is stored: an entry that keeps the variable's current value, the
    # secrets an app refers to, the environment's quota, the platform's
    # domain.
    rf"env{_N}: needs a value or a secret",
    rf"(env{_N}\.secret|git_secret): (the secret .* is|there is no secret|the secret .* has no key)",
    rf"domains{_N}: .* is under .*, the platform's domain",
]
STATE_RULES = {
    # The current password, and a new one that must differ from it.
    "changePassword": [r"current_password:", r"new_password: must differ"],
    # A quota's storage (at most 10Ti); a namespace the cluster or Berth
    # reserves.
    "createEnvironment": [r"quota\.storage:", r"name: the namespace"],
    "createApp": _APP,
    "updateApp": _APP,
    # The app's revisions.
    "rollbackApp": [r"revision:"],
    # The target environment: another of the same project.
    "promoteApp": [r"environment:"],
    # The app's scheduled processes; the app's processes, whose size a
    # one-off command takes.
    "runApp": [r"process:"],
    "runCommand": [r"process:"],
    # The template's variables, and what its apps need of the environment.
    "deployTemplate": [r"env\.", r"name:"],
    # Whether the app has a source to build.
    "createBuild": [r"git_repo:"],
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
    if not any(re.match(rule, detail) for rule in STATE_RULES.get(operation, [])):
        raise AssertionError(
            f"{operation} refused schema-valid data for a rule the description could "
            f"state: {detail}")
    return None


# Deleting a project or an environment soft-deletes it (the spec's rule 4,
# and their `deleting` flag): it stays readable, `deleting: true`, until the
# controller purges it, which on a loaded machine can be after the next
# request. So a read after such a DELETE may answer 200, and only those:
# every other DELETE (an app, a secret, a token, a member...) is held to the
# built-in `use_after_free` as before. scripts/conformance.sh excludes the
# built-in; this runs it and lets only that one case through.
_SOFT_DELETES = re.compile(r"^DELETE /api/v1/projects/[^/]+(/environments/[^/]+)?$")


@schemathesis.check
def use_after_free_unless_soft_deleted(ctx, response, case):
    from schemathesis.openapi.checks import UseAfterFree
    from schemathesis.specs.openapi.checks import use_after_free

    try:
        return use_after_free(ctx, response, case)
    except UseAfterFree as failure:
        if _SOFT_DELETES.match(failure.free):
            return None
        raise
