# Berth's two set-up commands, and a few more for everyday work.
#   make dev    run the whole API locally on http://127.0.0.1:3000
#   make test   run every test (DynamoDB Local, `sam validate --lint` and the
#               CDK stack's comparison with template.yaml included)
# Each installs what it is missing first. The cargo target directory lives
# outside the clone, so later clones on the same machine reuse the build.
#   make admin ARGS="cluster show"   the admin CLI against make dev's table
#   make reset                       stop make dev and wipe .local/ (its data; BERTH_LOCAL_DIR)
#   make lambda-watch                the functions as Lambdas (cargo-lambda), beside make dev
#   make invoke EVENT=events/health/liveness.json   invoke one of them
#   make package                     build every function for Lambda (FUNCTIONS=health: one), and the berth CLI
#   make cdk-synth                   the CDK stack's template, offline (infra/cdk/cdk.out)
#   make controller-image            the controller's OCI image, no daemon (buildah); prints its digest
#   make screenshots                 the web console's main pages, into docs/console/ (committed; docs/console.md)

# A CI job or a service may run make without HOME: then the user's home
# directory, from the password database (the scripts' `~` does the same).
HOME ?= $(shell getent passwd "$$(id -u)" | cut -d: -f6)
export HOME
export CARGO_TARGET_DIR ?= $(HOME)/.cache/berth/target
BERTH_CACHE ?= $(HOME)/.cache/berth

.PHONY: dev test bench lint admin reset lambda-watch invoke package cdk-synth controller-image controller-image-context screenshots

dev:
	@scripts/dev.sh

test:
	@scripts/test.sh

admin:
	@scripts/admin.sh $(ARGS)

reset:
	@scripts/reset.sh

screenshots:
	@scripts/console.sh screenshots

lambda-watch:
	@scripts/lambda.sh watch

invoke:
	@scripts/lambda.sh invoke $(EVENT)

# Each function is built on its own: built together, cargo would unify their
# features and link kube (the `cluster` feature) into every binary measured.
FUNCTIONS := $(notdir $(wildcard functions/*))

# Release binaries for Lambda (arm64, cross-linked by cargo-lambda's zig) in
# $(CARGO_TARGET_DIR)/lambda/<function>/bootstrap, each built on its own.
package:
	@scripts/install-tools.sh package
	@# The console function embeds the console's build (functions/console/build.rs).
	@scripts/console.sh build
	for function in $(FUNCTIONS); do PATH="$(BERTH_CACHE)/bin:$$PATH" cargo lambda build --release --arm64 --locked -p berth-fn-$$function || exit 1; done
	@for function in $(FUNCTIONS); do stat -c '%s' "$(CARGO_TARGET_DIR)/lambda/$$function/bootstrap" | awk -v f=$$function '{ printf "%-14s %10d bytes %6.1f MiB\n", f, $$1, $$1 / 1048576 }'; done
	cargo build --release --locked -p berth-cli
	@stat -c '%s' "$(CARGO_TARGET_DIR)/release/berth" | awk '{ printf "%-14s %10d bytes %6.1f MiB (the CLI, for this machine; docs/cli.md)\n", "berth", $$1, $$1 / 1048576 }'

cdk-synth:
	@infra/cdk/cdk.sh synth

# $(CARGO_TARGET_DIR)/controller-image/berth-controller.oci.tar (see Containerfile).
controller-image:
	@scripts/controller-image.sh

# Only the build context, for `docker build` or `podman build` (see Containerfile).
controller-image-context:
	@scripts/controller-image.sh --context-only

bench:
	cargo build --release --locked -p berth-benches --example bare_lambda --example bare_lambda_dynamodb
	for function in $(FUNCTIONS); do cargo build --release --locked -p berth-fn-$$function || exit 1; done
	@scripts/with-dynamodb.sh cargo bench --locked -p berth-benches --bench cold_start
	@scripts/with-dynamodb.sh cargo bench --locked -p berth-benches --bench requests
	@scripts/with-dynamodb.sh cargo bench --locked -p berth-benches --bench apps
	@scripts/with-dynamodb.sh cargo bench --locked -p berth-benches --bench audit_load
	cargo build --release --locked -p berth-controller
	cargo bench --locked -p berth-benches --bench controller_scale

lint:
	cargo clippy --workspace --all-targets -- -D warnings
	cargo fmt --all --check
