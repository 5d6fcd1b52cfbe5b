// template.yaml, read by the CDK app: the routes are written once, there, and
// both deployment paths take them from it.
import { readFileSync } from 'node:fs';
import { parse, type CollectionTag, type ScalarTag } from 'yaml';

export interface Route {
  /** `GET`, `POST` … or `ANY` */
  readonly method: string;
  /** `/api/v1/…`, or `$default` for every request no other route matches */
  readonly path: string;
}

/** Every HttpApi route of the SAM template, by the logical id of the function it reaches. */
export function samRoutes(templatePath: string): Map<string, Route[]> {
  const template = parse(readFileSync(templatePath, 'utf8'), { customTags: cloudFormationTags() });
  const routes = new Map<string, Route[]>();
  for (const [logicalId, resource] of Object.entries<SamResource>(template.Resources ?? {})) {
    if (resource.Type !== 'AWS::Serverless::Function') continue;
    for (const [eventName, event] of Object.entries(resource.Properties?.Events ?? {})) {
      // A scheduled function's rule is the stack's own (`schedule`), which
      // compare_with_sam.py holds to this template's.
      if (event.Type === 'Schedule') continue;
      const { Method: method, Path: path } = event.Properties ?? {};
      if (event.Type !== 'HttpApi' || typeof method !== 'string' || typeof path !== 'string') {
        throw new Error(`${templatePath}: ${logicalId}'s event ${eventName} is not an HttpApi route with a Method and a Path`);
      }
      routes.set(logicalId, [...(routes.get(logicalId) ?? []), { method: method.toUpperCase(), path }]);
    }
  }
  return routes;
}

interface SamResource {
  Type?: string;
  Properties?: {
    Events?: Record<string, { Type?: string; Properties?: { Method?: unknown; Path?: unknown } }>;
  };
}

/** CloudFormation's short forms (`!Ref`, `!GetAtt`, `!Sub` …) as the long forms they stand for. */
function cloudFormationTags(): (ScalarTag | CollectionTag)[] {
  const longForm = (name: string) => (name === 'Ref' || name === 'Condition' ? name : `Fn::${name}`);
  const names = ['Ref', 'Condition', 'GetAtt', 'Sub', 'Join', 'Select', 'Split', 'If', 'Equals', 'Not', 'And', 'Or',
    'FindInMap', 'ImportValue', 'Base64', 'Cidr', 'GetAZs', 'Transform'];
  return names.flatMap((name) => [
    {
      tag: `!${name}`,
      resolve: (value: string) => ({ [longForm(name)]: name === 'GetAtt' ? splitAtFirstDot(value) : value }),
    } satisfies ScalarTag,
    ...(['seq', 'map'] as const).map((collection) => ({
      tag: `!${name}`,
      collection,
      resolve: (value: { toJSON(): unknown }) => ({ [longForm(name)]: value.toJSON() }),
    }) satisfies CollectionTag),
  ]);
}

/** `!GetAtt Table.Arn` is `[Table, Arn]`; an attribute may itself hold dots. */
function splitAtFirstDot(value: string): string[] {
  const dot = value.indexOf('.');
  return dot < 0 ? [value] : [value.slice(0, dot), value.slice(dot + 1)];
}
