# The settings of Berth's local setup, sourced by `make dev`, `make admin`,
# `make lambda-watch` and `make invoke`, so they all reach the same DynamoDB
# Local and table. Each default can be overridden from the environment.
export BERTH_PORT=${BERTH_PORT:-3000}
export BERTH_DYNAMODB_PORT=${BERTH_DYNAMODB_PORT:-8000}
export BERTH_TABLE=${BERTH_TABLE:-berth}
export BERTH_LAMBDA_PORT=${BERTH_LAMBDA_PORT:-9000}
export BERTH_INSECURE_COOKIES=true
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$BERTH_DYNAMODB_PORT"
export AWS_REGION=${AWS_REGION:-us-east-1}
# DynamoDB Local (run with -sharedDb) takes any key; a profile must not be used.
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
unset AWS_PROFILE AWS_SESSION_TOKEN
