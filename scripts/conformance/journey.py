"""A user's journey through a client generated from the served description.

scripts/conformance.sh generates `berth_client` with openapi-python-client
from `GET /api/v1/openapi.json` and runs this with it on PYTHONPATH. Signed
in with the session cookie, as a browser-less client is, it makes one
change of each method and every body-less POST, and logs out; every call
goes through the generated client, which sends a body-less request without
a content type and parses every answer with the description's models. So
the description and the server cannot drift apart unseen: an operation the
client cannot express, or an answer it cannot read, fails here.

Environment: BERTH_API (the API's base URL), BERTH_EMAIL and
BERTH_PASSWORD (an owner's), BERTH_WAIT_SECONDS (default 120).
"""
import os
import sys
import time
import uuid

from berth_client import Client
from berth_client.api.apps import (
    create_app, delete_app, restart_app, run_app, update_app)
from berth_client.api.auth import get_current_user, login, logout
from berth_client.api.builds import create_build, create_webhook, delete_webhook
from berth_client.api.environments import (
    create_environment, delete_environment, get_environment, restore_environment)
from berth_client.api.projects import create_project
from berth_client.api.secrets import delete_secret, put_secret
from berth_client.api.templates import deploy_template
from berth_client.api.tokens import create_token, delete_token
from berth_client.models import (
    AppRecord, Build, CreateAppBody, CreateEnvironmentBody, CreateProjectBody,
    CreatedToken, CreatedWebhook, CurrentUser, Deployed, EnvironmentRecord,
    GetCurrentUserResponse401, Identity, LoginBody,
    NewToken, ProjectRecord, PutAnswer, PutSecretBody, RunAnswer, UpdateAppBody)
from berth_client.models.deploy_template_template import DeployTemplateTemplate

API = os.environ["BERTH_API"]
WAIT_SECONDS = float(os.environ.get("BERTH_WAIT_SECONDS", "120"))
steps = 0


def call(what, module, status, model, **arguments):
    """Calls an operation through the generated client; its answer must
    have `status` and parse as `model` (None: no body)."""
    global steps
    response = module.sync_detailed(**arguments)
    if response.status_code != status or (
            model is not None and not isinstance(response.parsed, model)):
        sys.exit(f"journey: {what}: want {status} {model.__name__ if model else ''}, got "
                 f"{int(response.status_code)} {response.content[:300]!r}")
    steps += 1
    print(f"journey: {what}: {status}", file=sys.stderr)
    return response


def eventually(what, attempt):
    """Retries `attempt` (a call that exits on the wrong answer) until the
    cluster has caught up, at most BERTH_WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            return attempt()
        except SystemExit:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


anonymous = Client(base_url=API, raise_on_unexpected_status=True)
signed_in = call("sign in", login, 200, Identity, client=anonymous, body=LoginBody(
    email=os.environ["BERTH_EMAIL"], password=os.environ["BERTH_PASSWORD"]))
cookie = signed_in.headers["set-cookie"].split(";")[0].split("=", 1)
assert cookie[0] == "berth_session" and cookie[1], "a session cookie"
# A client of its own, with the session cookie only: nothing else signs in.
session = Client(base_url=API, cookies={cookie[0]: cookie[1]},
                 raise_on_unexpected_status=True)
me = call("who am I", get_current_user, 200, CurrentUser, client=session).parsed
assert me.via == "session", me.via
# What the caller may do, as the API tells it (an owner: everything).
assert me.access.organization == "conformance", me.access.organization
assert len(me.access.permissions) == 12, me.access.permissions

# A POST with a body each: a project, a production environment (deleted
# and restored below), a scheduled app and an app with a source to build.
project = "journey-" + uuid.uuid4().hex[:8]
call("create a project", create_project, 201, ProjectRecord, client=session,
     body=CreateProjectBody.from_dict({"name": project, "display_name": "Journey"}))
call("create an environment", create_environment, 201, EnvironmentRecord, client=session,
     project=project,
     body=CreateEnvironmentBody.from_dict({"name": "prod", "env_type": "production"}))
env = {"project": project, "environment": "prod", "client": session}


def ready():
    record = get_environment.sync(**env)
    if not isinstance(record, EnvironmentRecord) or not record.ready:
        sys.exit("journey: the environment did not become ready")


eventually("the environment is ready", ready)
call("the environment is ready", get_environment, 200, EnvironmentRecord, **env)
call("create a scheduled app", create_app, 201, AppRecord, **env, body=CreateAppBody.from_dict(
    {"name": "nightly", "image": "busybox:1.37", "schedule": "0 3 * * *",
     "command": ["true"]}))
call("create an app with a source", create_app, 201, AppRecord, **env,
     body=CreateAppBody.from_dict(
         {"name": "shop", "image": "nginx:1.27", "port": 80,
          "git_repo": "https://git.example.com/acme/shop.git"}))
# A PATCH and a PUT, with bodies.
call("scale the app", update_app, 200, AppRecord, **env, app="shop",
     body=UpdateAppBody.from_dict({"replicas": 2}))
call("put a secret", put_secret, 201, PutAnswer, **env, secret="db",
     body=PutSecretBody.from_dict({"data": {"password": uuid.uuid4().hex}}))

# Every body-less POST.
call("restart", restart_app, 202, AppRecord, **env, app="shop")
eventually("run the scheduled process now", lambda: call(
    "run the scheduled process now", run_app, 202, RunAnswer, **env, app="nightly"))
call("deploy a template", deploy_template, 201, Deployed, **env,
     template=DeployTemplateTemplate.NGINX)
call("build", create_build, 202, Build, **env, app="shop")
call("make a webhook", create_webhook, 201, CreatedWebhook, **env, app="shop")

# DELETEs.
call("delete the webhook", delete_webhook, 204, None, **env, app="shop")
call("delete the secret", delete_secret, 204, None, **env, secret="db")
call("delete an app", delete_app, 204, None, **env, app="nightly")
token = call("make a token", create_token, 201, CreatedToken, client=session,
             body=NewToken.from_dict({"name": "journey"})).parsed
call("revoke it", delete_token, 204, None, client=session, token=token.id)
call("delete the environment", delete_environment, 202, EnvironmentRecord, **env)
call("restore it", restore_environment, 200, EnvironmentRecord, **env)

call("log out", logout, 204, None, client=session)
call("signed out", get_current_user, 401, GetCurrentUserResponse401, client=session)
print(f"journey: {steps} calls through the generated client", file=sys.stderr)
