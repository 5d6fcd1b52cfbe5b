// Berth's stack for CDK: the same stack as template.yaml (SAM), which a test
// in `make test` compares with this one's synthesized template
// (infra/cdk/compare_with_sam.py). The routes are not repeated here: they are
// read from template.yaml.
import { join } from 'node:path';
import { Aws, CfnOutput, CfnParameter, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { CfnApi, HttpApi, HttpMethod, HttpRoute, HttpRouteKey } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, BillingMode, CfnTable, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { CfnRule, Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Architecture, CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { RustFunction } from 'cargo-lambda-cdk';
import type { Construct } from 'constructs';
import { samRoutes } from './sam-template';

const REPOSITORY = join(__dirname, '..', '..', '..');

/** The DynamoDB actions a function may take on the table: each only what it uses. */
type TableAction =
  | 'GetItem' | 'BatchGetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem'
  | 'ConditionCheckItem' | 'Query' | 'Scan' | 'BatchWriteItem';

/** What nearly every function does: read and write single items, and read several at once. */
const ITEM_ACCESS: readonly TableAction[] = ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'];

interface BerthFunction {
  /** The binary (`functions/<binary>/`), which also names the function: `auth` → `AuthFunction`. */
  readonly binary: string;
  readonly description: string;
  readonly tableActions: readonly TableAction[];
  /** Whether it also queries the index `gsi1`. */
  readonly readsIndex?: boolean;
  /**
   * Whether it also gets the gateway's hostname and addresses (the domain
   * check) and the apps domain (closed to custom domains).
   */
  readonly domainParameters?: boolean;
  /**
   * Whether it is the registry's token service: it gets the API's public
   * URL and may sign with the registry's KMS key (and read its public key).
   */
  readonly signsRegistryTokens?: boolean;
  /** Seconds it may run; by default 29, under API Gateway's 30. */
  readonly timeoutSeconds?: number;
  /** Its memory in MB; by default 256. */
  readonly memorySize?: number;
  /**
   * For a scheduled function (which serves no route): the EventBridge rule
   * that invokes it, named `<logical id><name>` as SAM names a `Schedule`
   * event's rule.
   */
  readonly schedule?: { readonly name: string; readonly minutes: number };
}

const FUNCTIONS: readonly BerthFunction[] = [
  {
    binary: 'auth',
    description: 'Sign-in, sign-out, the current user and password changes',
    tableActions: [...ITEM_ACCESS, 'DeleteItem', 'Query'],
  },
  {
    binary: 'tokens',
    description: 'Personal API tokens',
    tableActions: ['BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query'],
  },
  {
    binary: 'members',
    description: 'Organization members and roles',
    tableActions: [...ITEM_ACCESS, 'DeleteItem', 'ConditionCheckItem', 'Query'],
    readsIndex: true,
  },
  {
    binary: 'audit',
    description: 'The audit log',
    tableActions: ['BatchGetItem', 'PutItem', 'UpdateItem', 'Query'],
  },
  {
    binary: 'health',
    description: 'Liveness and the health report',
    tableActions: ITEM_ACCESS,
  },
  {
    binary: 'projects',
    description: 'Projects',
    // Members' project roles and a project's audit log (both read index
    // gsi1); deploy tokens, and forgetting a deleted project's.
    tableActions: [...ITEM_ACCESS, 'DeleteItem', 'BatchWriteItem', 'Query'],
    readsIndex: true,
  },
  {
    binary: 'environments',
    description: 'Environments of a project',
    // A deletion's record, with the entries of the environment's apps.
    tableActions: [...ITEM_ACCESS, 'BatchWriteItem'],
  },
  {
    binary: 'apps',
    description: 'Apps, their releases, rollback, promotion and domain check',
    tableActions: [...ITEM_ACCESS, 'Query', 'BatchWriteItem', 'DeleteItem'],
    domainParameters: true,
  },
  {
    binary: 'secrets',
    description: 'Secrets of an environment',
    tableActions: ITEM_ACCESS,
  },
  {
    binary: 'builds',
    description: 'Builds of apps from source',
    // Webhooks: a replaced or deleted hook's item, a forgotten delivery.
    tableActions: [...ITEM_ACCESS, 'DeleteItem'],
  },
  {
    binary: 'registry',
    description: "The image registry's token service",
    tableActions: ITEM_ACCESS,
    signsRegistryTokens: true,
  },
  {
    binary: 'templates',
    description: 'The template catalogue and deploying templates',
    tableActions: [...ITEM_ACCESS, 'Query', 'BatchWriteItem', 'DeleteItem'],
  },
  {
    binary: 'cleanup',
    description: "Removes what purged environments left in the table, checks domains' proofs",
    // The stored kubeconfig; the records and entries it sweeps; what it
    // removes; the hostnames' items (index gsi1) it checks and writes, and
    // the claims of before it adopts once (a scan).
    tableActions: [...ITEM_ACCESS, 'Query', 'Scan', 'DeleteItem', 'BatchWriteItem'],
    readsIndex: true,
    // A sweep stops starting work 15 s before this; the next goes on.
    timeoutSeconds: 120,
    schedule: { name: 'Sweep', minutes: 5 },
  },
  {
    binary: 'console',
    description: "The web console's pages and assets",
    // Its files are in its binary: no table, no operation.
    tableActions: [],
    memorySize: 128,
    timeoutSeconds: 10,
  },
];

const INDEX = 'gsi1';

export class BerthStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, {
      description:
        'Berth, the control plane of a container platform: an HTTP API with one Rust Lambda function per resource group, and one DynamoDB table.',
      ...props,
    });

    const tableName = new CfnParameter(this, 'TableName', {
      type: 'String',
      default: 'berth',
      description: 'The DynamoDB table Berth keeps its state in.',
    });
    const sessionHours = new CfnParameter(this, 'SessionHours', {
      type: 'Number',
      default: 12,
      minValue: 1,
      maxValue: 720,
      description: 'Absolute lifetime of a browser session.',
    });
    const gatewayHostname = new CfnParameter(this, 'GatewayHostname', {
      type: 'String',
      default: '',
      description:
        "The hostname app domains are a CNAME of to reach the gateway (the domain check's expected target); empty if there is none.",
    });
    const gatewayAddresses = new CfnParameter(this, 'GatewayAddresses', {
      type: 'String',
      default: '',
      description:
        "The gateway's IPv4/IPv6 addresses, comma-separated, for domains that point at it with A/AAAA records; empty if there are none.",
    });
    const appsDomain = new CfnParameter(this, 'AppsDomain', {
      type: 'String',
      default: '',
      description:
        "The domain of the apps' default hosts, as the controller's BERTH_APPS_DOMAIN; no custom domain may be it or fall under it. Empty if there is none.",
    });

    const reservedDomains = new CfnParameter(this, 'ReservedDomains', {
      type: 'String',
      default: '',
      description:
        "The operator's own hostnames, comma-separated, BERTH_RESERVED_DOMAINS: no custom domain may be one or fall under one. Empty if there are none.",
    });

    // The one table (shared/store/src/schema.rs defines the same shape for local use).
    const table = new Table(this, 'Table', {
      tableName: tableName.valueAsString,
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    table.addGlobalSecondaryIndex({
      indexName: INDEX,
      partitionKey: { name: 'gsi1pk', type: AttributeType.STRING },
      sortKey: { name: 'gsi1sk', type: AttributeType.STRING },
      projectionType: ProjectionType.ALL,
    });
    // The same logical ids as template.yaml's, so the two templates read alike.
    (table.node.defaultChild as CfnTable).overrideLogicalId('Table');

    const publicUrl = new CfnParameter(this, 'PublicUrl', {
      type: 'String',
      default: '',
      description:
        "The API's public URL (https://api.example.com), BERTH_PUBLIC_URL: the registry's token service is PublicUrl/api/v1/registry/token and its tokens' issuer is PublicUrl. Empty until a registry trusts it.",
    });
    const registrySigningKeyId = new CfnParameter(this, 'RegistrySigningKeyId', {
      type: 'String',
      default: 'none',
      description:
        'The id of the AWS KMS key (ECC_NIST_P256, SIGN_VERIFY) the registry\'s tokens are signed with; the registry function may sign with it and read its public key, nothing else. "none" until a registry trusts Berth.',
    });

    const functions = new Map<string, RustFunction>();
    for (const spec of FUNCTIONS) {
      const logicalId = `${spec.binary[0].toUpperCase()}${spec.binary.slice(1)}Function`;
      const fn = new RustFunction(this, logicalId, {
        // Built from the function's own crate, so cargo enables only the
        // features that function uses (a workspace build would unify them).
        manifestPath: join(REPOSITORY, 'functions', spec.binary, 'Cargo.toml'),
        binaryName: spec.binary,
        runtime: 'provided.al2023',
        architecture: Architecture.ARM_64,
        description: `Berth: ${spec.description}`,
        memorySize: spec.memorySize ?? 256,
        // Above the request deadline (BERTH_REQUEST_DEADLINE_SECONDS, default
        // 20 s), so a request cut off by it is still answered and audited;
        // below API Gateway's own 30 s.
        timeout: Duration.seconds(spec.timeoutSeconds ?? 29),
        environment: {
          BERTH_TABLE: table.tableName,
          BERTH_SESSION_HOURS: sessionHours.valueAsString,
          RUST_LOG: 'info',
          ...(spec.domainParameters
            ? {
                BERTH_GATEWAY_HOSTNAME: gatewayHostname.valueAsString,
                BERTH_GATEWAY_ADDRESSES: gatewayAddresses.valueAsString,
                BERTH_APPS_DOMAIN: appsDomain.valueAsString,
                BERTH_RESERVED_DOMAINS: reservedDomains.valueAsString,
              }
            : {}),
          ...(spec.signsRegistryTokens
            ? {
                BERTH_PUBLIC_URL: publicUrl.valueAsString,
                BERTH_REGISTRY_SIGNING_KEY: `kms:${registrySigningKeyId.valueAsString}`,
              }
            : {}),
        },
      });
      (fn.node.defaultChild as CfnFunction).overrideLogicalId(logicalId);
      if (spec.tableActions.length > 0) {
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: spec.tableActions.map((action) => `dynamodb:${action}`),
            resources: spec.readsIndex ? [table.tableArn, `${table.tableArn}/index/${INDEX}`] : [table.tableArn],
          }),
        );
      }
      if (spec.signsRegistryTokens) {
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['kms:Sign', 'kms:GetPublicKey'],
            resources: [
              `arn:${Aws.PARTITION}:kms:${Aws.REGION}:${Aws.ACCOUNT_ID}:key/${registrySigningKeyId.valueAsString}`,
            ],
          }),
        );
      }
      functions.set(logicalId, fn);
      if (spec.schedule !== undefined) {
        const rule = new Rule(this, `${logicalId}${spec.schedule.name}`, {
          schedule: Schedule.rate(Duration.minutes(spec.schedule.minutes)),
          targets: [new LambdaFunction(fn)],
        });
        (rule.node.defaultChild as CfnRule).overrideLogicalId(`${logicalId}${spec.schedule.name}`);
      }
    }

    const api = new HttpApi(this, 'Api', { apiName: Aws.STACK_NAME, createDefaultStage: true });
    (api.node.defaultChild as CfnApi).overrideLogicalId('Api');
    for (const [logicalId, routes] of samRoutes(join(REPOSITORY, 'template.yaml'))) {
      const fn = functions.get(logicalId);
      if (fn === undefined) {
        throw new Error(`template.yaml routes requests to ${logicalId}, which this stack does not define`);
      }
      const integration = new HttpLambdaIntegration(`${logicalId}Integration`, fn);
      for (const { method, path } of routes) {
        new HttpRoute(this, `${logicalId} ${method} ${path}`, { httpApi: api, routeKey: routeKey(method, path), integration });
      }
    }

    new CfnOutput(this, 'ApiUrl', { description: 'The base URL of the API.', value: api.apiEndpoint });
    // Outputs and parameters are apart in CloudFormation, not among constructs.
    new CfnOutput(this, 'TableNameOutput', { value: table.tableName }).overrideLogicalId('TableName');
  }
}

function routeKey(method: string, path: string): HttpRouteKey {
  if (path === '$default') {
    if (method !== 'ANY') throw new Error(`the $default route takes every method, not only ${method}`);
    return HttpRouteKey.DEFAULT;
  }
  if (!(Object.values(HttpMethod) as string[]).includes(method)) {
    throw new Error(`${method} ${path}: ${method} is not an HTTP API method`);
  }
  return HttpRouteKey.with(path, method as HttpMethod);
}
