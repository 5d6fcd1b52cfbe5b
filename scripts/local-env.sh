# The settings of Berth's local setup, sourced by `make dev`, `make admin`,
# `make reset`, `make lambda-watch` and `make invoke`, so they all reach the
# same DynamoDB Local, table and state. Each default can be overridden from
# the environment (docs/configuration.md, "make dev").
export BERTH_PORT=${BERTH_PORT:-3000}
export BERTH_DYNAMODB_PORT=${BERTH_DYNAMODB_PORT:-8000}
export BERTH_STANDIN_PORT=${BERTH_STANDIN_PORT:-6443}
# The controller's /metrics, /healthz and /readyz, on loopback only.
export BERTH_CONTROLLER_PORT=${BERTH_CONTROLLER_PORT:-3001}
export BERTH_TABLE=${BERTH_TABLE:-berth}
export BERTH_LAMBDA_PORT=${BERTH_LAMBDA_PORT:-9000}
# Where `make dev` keeps its data, logs and pid files (relative to the clone).
export BERTH_LOCAL_DIR=${BERTH_LOCAL_DIR:-.local}
export BERTH_INSECURE_COOKIES=true
# The registry's token service: its key (made by `make dev`) and its URL.
case $BERTH_LOCAL_DIR in
  /*) export BERTH_REGISTRY_SIGNING_KEY=${BERTH_REGISTRY_SIGNING_KEY:-file:$BERTH_LOCAL_DIR/registry-signing-key.pem} ;;
  *) export BERTH_REGISTRY_SIGNING_KEY=${BERTH_REGISTRY_SIGNING_KEY:-file:$PWD/$BERTH_LOCAL_DIR/registry-signing-key.pem} ;;
esac
export BERTH_PUBLIC_URL=${BERTH_PUBLIC_URL:-http://127.0.0.1:$BERTH_PORT}
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$BERTH_DYNAMODB_PORT"
export AWS_REGION=${AWS_REGION:-us-east-1}
# DynamoDB Local (run with -sharedDb) takes any key; a profile must not be used.
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
unset AWS_PROFILE AWS_SESSION_TOKEN
