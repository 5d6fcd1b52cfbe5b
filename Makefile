# Berth's two set-up commands, and a few more for everyday work.
#   make dev    run the whole API locally on http://127.0.0.1:3000
#   make test   run every test (DynamoDB Local and cfn-lint included)
# Both install what is missing first. The cargo target directory lives outside
# the clone, so later clones on the same machine reuse the build.
#   make admin ARGS="cluster show"   the admin CLI against make dev's table
#   make reset                       stop make dev and wipe .local/ (its data)
#   make lambda-watch                the functions as Lambdas (cargo-lambda), beside make dev
#   make invoke EVENT=events/health/liveness.json   invoke one of them

export CARGO_TARGET_DIR ?= $(HOME)/.cache/berth/target

.PHONY: dev test bench lint admin reset lambda-watch invoke

dev:
	@scripts/dev.sh

test:
	@scripts/test.sh

admin:
	@scripts/admin.sh $(ARGS)

reset:
	@scripts/reset.sh

lambda-watch:
	@scripts/lambda.sh watch

invoke:
	@scripts/lambda.sh invoke $(EVENT)

# Each function is built on its own: built together, cargo would unify their
# features and link kube (the `cluster` feature) into every binary measured.
FUNCTIONS := $(notdir $(wildcard functions/*))

bench:
	cargo build --release --locked --example bare_lambda
	for function in $(FUNCTIONS); do cargo build --release --locked -p berth-fn-$$function || exit 1; done
	cargo bench --locked --bench cold_start
	@scripts/with-dynamodb.sh cargo bench --locked --bench requests
	@scripts/with-dynamodb.sh cargo bench --locked --bench apps
	@scripts/with-dynamodb.sh cargo bench --locked --bench audit_load

lint:
	cargo clippy --workspace --all-targets -- -D warnings
	cargo fmt --all --check
