#!/usr/bin/env node
// The CDK app: `npx cdk deploy` (from infra/cdk/) deploys Berth's stack,
// building each function with cargo-lambda. The stack is environment-agnostic
// (no lookups), so it also synthesizes offline: `make cdk-synth`.
import { App } from 'aws-cdk-lib';
import { BerthStack } from '../lib/berth-stack';

const app = new App({ analyticsReporting: false });
new BerthStack(app, app.node.tryGetContext('stackName') ?? 'Berth');
app.synth();
