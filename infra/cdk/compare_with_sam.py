"""The CDK stack deploys what template.yaml (SAM) deploys: run by `make test`.

    python3 compare_with_sam.py TEMPLATE_YAML CDK_TEMPLATE_JSON

template.yaml is first expanded by the SAM translator (the SAM CLI's own,
offline: globals applied, events turned into the API's routes and
permissions, policies into roles), so both sides are plain CloudFormation. Then what each
deploys is compared, not how it is written: the stack's parameters, outputs
and description; the table (keys, index, TTL, billing, recovery, encryption,
retention); every function (its logical id, runtime, architecture, handler,
memory, timeout, description and environment, and every other property
either side sets); each function's IAM statements, managed policies and
trust; the API's routes (method and path → function, payload format), its
stage, the schedules (EventBridge rules) and who may invoke which function. A resource of a type this script
does not compare, on either side, fails it too, so nothing is added to one
template alone.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from typing import Any

import cfnlint.decode
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

# Only CDK's deployment machinery: the bootstrap stack's version, checked by a rule.
CDK_ONLY_PARAMETERS = {"BootstrapVersion"}
COMPARED_TYPES = {
    "AWS::DynamoDB::Table",
    "AWS::Lambda::Function",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "AWS::Lambda::Permission",
    "AWS::ApiGatewayV2::Api",
    "AWS::ApiGatewayV2::Stage",
    "AWS::ApiGatewayV2::Route",
    "AWS::ApiGatewayV2::Integration",
    "AWS::Events::Rule",
}
# What differs by tool and not in what is deployed: the code's location (an
# S3 object each tool uploads), the role (compared as permissions), tags
# SAM adds to mark what it created.
FUNCTION_PROPERTIES_NOT_COMPARED = {"Code", "Role", "Tags"}


def sam_template(path: str) -> dict[str, Any]:
    template, problems = cfnlint.decode.decode(path)
    if problems or template is None:
        raise SystemExit(f"{path}: cannot be read: {problems}")
    template = plain(template)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            # The translator wants the S3 object `sam deploy` would upload.
            resource["Properties"]["CodeUri"] = "s3://bucket/key"
    # ARNs the translator writes take their partition from the region.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return Translator(managed_policy_map={}, sam_parser=Parser()).translate(
        sam_template=template, parameter_values={}
    )


def plain(value: Any) -> Any:
    """cfn-lint's nodes (which remember their line) as plain dicts and lists."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def text(value: Any) -> Any:
    """An intrinsic function as the string it makes: `{"Ref": "X"}` → `${X}`,
    `{"Fn::GetAtt": ["X", "Y"]}` → `${X.Y}`, `Fn::Sub` and `Fn::Join` spelled
    out; structures are normalized throughout."""
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return "${%s}" % value["Ref"]
        if set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            return "${%s}" % (".".join(target) if isinstance(target, list) else target)
        if set(value) == {"Fn::Sub"}:
            sub = value["Fn::Sub"]
            if isinstance(sub, str):
                return sub
            pattern, variables = sub
            return re.sub(
                r"\$\{([^}]+)\}",
                lambda m: str(text(variables[m.group(1)])) if m.group(1) in variables else m.group(0),
                pattern,
            )
        if set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(str(text(part)) for part in parts)
        return {key: text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [text(item) for item in value]
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def referenced_id(value: Any) -> str:
    """The logical id a `Ref`, a `GetAtt …Arn` or a Lambda integration URI names."""
    found = re.search(r"\$\{([A-Za-z0-9]+)(?:\.Arn)?\}", str(text(value)))
    if not found:
        raise SystemExit(f"no resource named in {value!r}")
    return found.group(1)


def table(resource: dict[str, Any]) -> dict[str, Any]:
    properties = text(resource["Properties"])
    properties["AttributeDefinitions"] = sorted(
        properties.get("AttributeDefinitions", []), key=lambda a: a["AttributeName"]
    )
    properties["GlobalSecondaryIndexes"] = sorted(
        properties.get("GlobalSecondaryIndexes", []), key=lambda i: i["IndexName"]
    )
    properties["DeletionPolicy"] = resource.get("DeletionPolicy", "Delete")
    properties["UpdateReplacePolicy"] = resource.get("UpdateReplacePolicy", "Delete")
    return properties


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "Effect": statement["Effect"],
            "Action": sorted(as_list(statement["Action"])),
            "Resource": sorted(str(text(r)) for r in as_list(statement.get("Resource", []))),
        }
        for statement in as_list(document["Statement"])
    ]


def permissions(template: dict[str, Any], role_id: str) -> dict[str, Any]:
    """What a function's role may do, wherever each tool writes it: inline in
    the role (SAM) or as policies attached to it (CDK)."""
    role = template["Resources"][role_id]["Properties"]
    granted = [s for policy in role.get("Policies", []) for s in statements(policy["PolicyDocument"])]
    for policy in of_type(template, "AWS::IAM::Policy").values():
        if role_id in {referenced_id(r) for r in policy["Properties"].get("Roles", [])}:
            granted += statements(policy["Properties"]["PolicyDocument"])
    trust = statements(
        {"Statement": [{**s, "Resource": []} for s in as_list(role["AssumeRolePolicyDocument"]["Statement"])]}
    )
    principals = sorted(
        service
        for s in as_list(role["AssumeRolePolicyDocument"]["Statement"])
        for service in as_list(s.get("Principal", {}).get("Service", []))
    )
    return {
        "statements": sorted(granted, key=json.dumps),
        # The ARN's partition is resolved by SAM and a reference in CDK: the
        # policy is what counts.
        "managed policies": sorted(str(text(arn)).split(":policy/")[-1] for arn in role.get("ManagedPolicyArns", [])),
        "trust": {"statements": trust, "principals": principals},
    }


def functions(template: dict[str, Any]) -> dict[str, Any]:
    described = {}
    for name, resource in of_type(template, "AWS::Lambda::Function").items():
        properties = resource["Properties"]
        described[name] = {
            **{k: text(v) for k, v in properties.items() if k not in FUNCTION_PROPERTIES_NOT_COMPARED},
            "permissions": permissions(template, referenced_id(properties["Role"])),
        }
    return described


def sam_routes(template: dict[str, Any]) -> dict[str, Any]:
    """Routes of SAM's HTTP APIs, which it writes as an OpenAPI body."""
    routes = {}
    for api_id, api in of_type(template, "AWS::ApiGatewayV2::Api").items():
        for path, operations in api["Properties"].get("Body", {}).get("paths", {}).items():
            for method, operation in operations.items():
                integration = operation["x-amazon-apigateway-integration"]
                method = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
                routes[f"{method} {path}"] = {
                    "api": api_id,
                    "function": referenced_id(integration["uri"]),
                    "payload format": integration.get("payloadFormatVersion"),
                }
    return routes


def cdk_routes(template: dict[str, Any]) -> dict[str, Any]:
    integrations = of_type(template, "AWS::ApiGatewayV2::Integration")
    routes = {}
    for route in of_type(template, "AWS::ApiGatewayV2::Route").values():
        properties = route["Properties"]
        integration = integrations[referenced_id(properties["Target"])]["Properties"]
        if integration["IntegrationType"] != "AWS_PROXY" or properties.get("AuthorizationType", "NONE") != "NONE":
            raise SystemExit(f"{properties['RouteKey']}: not a plain Lambda proxy route")
        key = "ANY $default" if properties["RouteKey"] == "$default" else properties["RouteKey"]
        routes[key] = {
            "api": referenced_id(properties["ApiId"]),
            "function": referenced_id(integration["IntegrationUri"]),
            "payload format": integration.get("PayloadFormatVersion"),
        }
    return routes


def invokers(template: dict[str, Any]) -> dict[str, list[str]]:
    """Which API or schedule (an EventBridge rule) may invoke which function."""
    allowed = defaultdict(set)
    for permission in of_type(template, "AWS::Lambda::Permission").values():
        properties = permission["Properties"]
        source = str(text(properties.get("SourceArn", "")))
        api = re.search(r":execute-api:[^/]*:\$\{([A-Za-z0-9]+)\}/", source)
        rule = re.fullmatch(r"\$\{([A-Za-z0-9]+)\.Arn\}", source)
        if properties["Action"] != "lambda:InvokeFunction":
            raise SystemExit(f"a permission this script does not know: {properties}")
        if properties["Principal"] == "apigateway.amazonaws.com" and api:
            allowed[referenced_id(properties["FunctionName"])].add(api.group(1))
        elif properties["Principal"] == "events.amazonaws.com" and rule:
            allowed[referenced_id(properties["FunctionName"])].add(rule.group(1))
        else:
            raise SystemExit(f"a permission this script does not know: {properties}")
    return {function: sorted(sources) for function, sources in sorted(allowed.items())}


def schedules(template: dict[str, Any]) -> dict[str, Any]:
    """Each EventBridge rule: its schedule, whether it is on, what it invokes."""
    described = {}
    for name, rule in of_type(template, "AWS::Events::Rule").items():
        properties = rule["Properties"]
        if set(properties) - {"ScheduleExpression", "State", "Targets"}:
            raise SystemExit(f"{name}: a rule property this script does not compare: {sorted(properties)}")
        described[name] = {
            "schedule": properties["ScheduleExpression"],
            "state": properties.get("State", "ENABLED"),
            "targets": sorted(referenced_id(target["Arn"]) for target in properties["Targets"]),
        }
    return described


def stages(template: dict[str, Any]) -> list[Any]:
    return sorted(
        (
            {
                "api": referenced_id(stage["Properties"]["ApiId"]),
                "name": stage["Properties"]["StageName"],
                "auto deploy": stage["Properties"].get("AutoDeploy", False),
            }
            for stage in of_type(template, "AWS::ApiGatewayV2::Stage").values()
        ),
        key=json.dumps,
    )


def deployment(template: dict[str, Any], routes: dict[str, Any]) -> dict[str, Any]:
    unknown = {r["Type"] for r in template["Resources"].values()} - COMPARED_TYPES
    if unknown:
        raise SystemExit(f"resources of a type this comparison does not know: {sorted(unknown)}; compare them too")
    return {
        "description": template.get("Description"),
        "parameters": {
            name: parameter
            for name, parameter in template.get("Parameters", {}).items()
            if name not in CDK_ONLY_PARAMETERS
        },
        "outputs": text(template.get("Outputs", {})),
        "tables": {name: table(r) for name, r in of_type(template, "AWS::DynamoDB::Table").items()},
        "functions": functions(template),
        "apis": sorted(of_type(template, "AWS::ApiGatewayV2::Api")),
        "stages": stages(template),
        "routes": routes,
        "invokers": invokers(template),
        "schedules": schedules(template),
    }


def differences(sam: Any, cdk: Any, where: str = "") -> list[str]:
    if isinstance(sam, dict) and isinstance(cdk, dict):
        found = []
        for key in sorted(set(sam) | set(cdk)):
            if key not in cdk:
                found.append(f"{where}/{key}: only in template.yaml: {json.dumps(sam[key])}")
            elif key not in sam:
                found.append(f"{where}/{key}: only in the CDK stack: {json.dumps(cdk[key])}")
            else:
                found += differences(sam[key], cdk[key], f"{where}/{key}")
        return found
    if sam != cdk:
        return [f"{where}: template.yaml has {json.dumps(sam)}, the CDK stack {json.dumps(cdk)}"]
    return []


def main() -> int:
    sam_path, cdk_path = sys.argv[1:3]
    sam = sam_template(sam_path)
    with open(cdk_path) as file:
        cdk = json.load(file)
    expected = deployment(sam, sam_routes(sam))
    actual = deployment(cdk, cdk_routes(cdk))
    failed = 0
    for aspect in expected:
        found = differences(expected[aspect], actual[aspect], aspect)
        count = len(expected[aspect]) if isinstance(expected[aspect], (dict, list)) else 1
        if found:
            failed += 1
            print(f"FAILED {aspect}:")
            for line in found:
                print(f"  {line}")
        else:
            print(f"ok     {aspect} ({count})")
    print(f"cdk-vs-sam: {len(expected) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
