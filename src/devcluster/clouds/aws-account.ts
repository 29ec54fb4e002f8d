import { randomBytes, randomUUID } from 'node:crypto';
import type { StatementEntry } from '../../api/cloudcredential.ts';

/**
 * The dev cluster's AWS account, as far as credentials go (docs/devcluster.md): IAM users with access keys
 * and policies, roles that trust ServiceAccounts (what ccoctl creates for an STS cluster), and the one
 * question every simulated API call asks: may these credentials do this action on this resource? The
 * answers are AWS's, with its error codes and message forms.
 *
 * A key is valid while it exists: the root key (kube-system/aws-creds), keys the Cloud Credential
 * Operator minted, keys of users an administrator created; a rotated-away or deleted key is refused.
 */

export const ACCOUNT_ID = '123456789012';

/** What a caller presents: keys, or a role assumed with a web identity (a ServiceAccount token). */
export type AwsCredentials =
  | { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | { roleArn: string; webIdentity: { serviceAccount: string; audience: string } };

/** The API name of an action for error messages: `ec2:RunInstances` -> RunInstances. */
const operationOf = (action: string) => action.slice(action.indexOf(':') + 1);
const serviceOf = (action: string) => action.slice(0, action.indexOf(':'));

/** The HTTP status AWS answers each error code with. */
const STATUS: Record<string, number> = { AuthFailure: 401, UnauthorizedOperation: 403, AccessDenied: 403, InvalidClientTokenId: 403 };
const SDK_SERVICE: Record<string, string> = { ec2: 'EC2', s3: 'S3', iam: 'IAM', sts: 'STS' };

/**
 * An error as AWS answers it: the code, and the message form the AWS CLI prints (the image jobs run the
 * CLI). `sdkMessage` is the form the Go SDK v2 gives a program such as the cloud-api-adaptor.
 */
export class AwsError extends Error {
  readonly code: string;
  readonly operation: string;
  readonly detail: string;
  /** The action the caller attempted (`ec2:RunInstances`), when it differs from the failing operation. */
  attempted?: string;
  constructor(code: string, operation: string, detail: string) {
    super(`An error occurred (${code}) when calling the ${operation} operation: ${detail}`);
    this.name = 'AwsError';
    this.code = code;
    this.operation = operation;
    this.detail = detail;
  }

  /** The Go SDK v2's words: `operation error EC2: RunInstances, https response error StatusCode: 403, ...`. */
  get sdkMessage(): string {
    const requestId = randomUUID();
    const attempted = this.attempted ?? '';
    const outer = `operation error ${SDK_SERVICE[serviceOf(attempted)] ?? 'EC2'}: ${operationOf(attempted) || this.operation}`;
    if (this.code === 'NoCredentialProviders')
      return `${outer}, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`;
    const api = `https response error StatusCode: ${STATUS[this.code] ?? 400}, RequestID: ${requestId}, api error ${this.code}: ${this.detail}`;
    if (this.operation === 'AssumeRoleWithWebIdentity')
      return `${outer}, get identity: get credentials: failed to refresh cached credentials, failed to retrieve credentials, operation error STS: AssumeRoleWithWebIdentity, ${api}`;
    return `${outer}, ${api}`;
  }
}

interface User {
  name: string;
  /** undefined: the account's administrator (every action). */
  policy?: StatementEntry[];
  keys: Map<string, string>;
}

/** Temporary credentials STS issued for a role (AssumeRoleWithWebIdentity). */
interface Session {
  secretAccessKey: string;
  sessionToken: string;
  roleArn: string;
  /** Who assumed it (the token's subject), and the RoleSessionName it asked for (the ARN's last part). */
  subject: string;
  sessionName: string;
  expiresAt: number;
}

interface Role {
  arn: string;
  policy: StatementEntry[];
  /** `system:serviceaccount:<namespace>:<name>` subjects the role's trust policy names. */
  trusted: string[];
}

const ALL: StatementEntry[] = [{ effect: 'Allow', action: ['*'], resource: '*' }];

const glob = (pattern: string, value: string, ignoreCase: boolean): boolean => {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    ignoreCase ? 'i' : '',
  );
  return re.test(value);
};

/** IAM's evaluation: an explicit Deny wins, then any Allow; actions match case-insensitively, resources by glob. */
export function policyAllows(policy: readonly StatementEntry[], action: string, resource: string): boolean {
  const matches = (s: StatementEntry) => s.action.some((a) => glob(a, action, true)) && glob(s.resource, resource, false);
  if (policy.some((s) => s.effect === 'Deny' && matches(s))) return false;
  return policy.some((s) => s.effect === 'Allow' && matches(s));
}

export class AwsAccount {
  readonly accountId = ACCOUNT_ID;
  private readonly users = new Map<string, User>();
  private readonly roles = new Map<string, Role>();
  private readonly sessions = new Map<string, Session>();
  /** The account's clock (sessions expire on it); tests move it. */
  now: () => number = Date.now;
  /** Every call answered, and those refused, for tests and the docs' figures. */
  readonly stats = { calls: 0, refused: 0 };
  /** The refusals, newest last (at most 100). */
  readonly refusals: { action: string; code: string; message: string }[] = [];
  /** The actions each principal (user name, or role ARN) was allowed: what the simulated paths really use. */
  readonly allowed = new Map<string, Set<string>>();

  private newKey(): { accessKeyId: string; secretAccessKey: string } {
    return {
      accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase().slice(0, 16)}`,
      secretAccessKey: randomBytes(30).toString('base64').slice(0, 40),
    };
  }

  /**
   * Creates a user with a policy (undefined: the administrator's every right) and an access key, or with
   * the given key (an administrator's user whose key a test already knows).
   */
  createUser(name: string, policy?: StatementEntry[], key?: { accessKeyId: string; secretAccessKey: string }) {
    const k = key ?? this.newKey();
    this.users.set(name, {
      name,
      ...(policy ? { policy: structuredClone(policy) } : {}),
      keys: new Map([[k.accessKeyId, k.secretAccessKey]]),
    });
    return k;
  }

  /** The IAM users' names, and a user's access key ids (what `aws iam list-users` and `list-access-keys` show). */
  userNames(): string[] {
    return [...this.users.keys()];
  }

  keyIds(name: string): string[] {
    return [...(this.users.get(name)?.keys.keys() ?? [])];
  }

  /** A user's policy (undefined: the administrator's every right, or no such user). */
  userPolicy(name: string): StatementEntry[] | undefined {
    return this.users.get(name)?.policy;
  }

  hasUser(name: string): boolean {
    return this.users.has(name);
  }

  deleteUser(name: string): void {
    this.users.delete(name);
  }

  putUserPolicy(name: string, policy: StatementEntry[]): void {
    const u = this.users.get(name);
    if (u) u.policy = structuredClone(policy);
  }

  /** A new access key for the user; every older key of the user is deleted (refused from now on). */
  rotateKey(name: string): { accessKeyId: string; secretAccessKey: string } {
    const u = this.users.get(name);
    if (!u) throw new Error(`no IAM user ${name}`);
    const k = this.newKey();
    u.keys = new Map([[k.accessKeyId, k.secretAccessKey]]);
    return k;
  }

  /** The user whose key this is, when the key exists and its secret matches. */
  userOfKey(accessKeyId: string, secretAccessKey: string): User | undefined {
    for (const u of this.users.values()) if (u.keys.get(accessKeyId) === secretAccessKey) return u;
    return undefined;
  }

  /** Whether the role exists and its trust policy names the subject (`system:serviceaccount:<ns>:<name>`). */
  roleTrusts(roleArn: string, subject: string): boolean {
    return !!this.roles.get(roleArn)?.trusted.includes(subject);
  }

  /** STS's temporary credentials for the role, assumed by `subject`, valid for `durationMs` from now. */
  issueSession(roleArn: string, subject: string, durationMs = 3_600_000, sessionName = subject) {
    const accessKeyId = `ASIA${randomBytes(8).toString('hex').toUpperCase().slice(0, 16)}`;
    const session: Session = {
      secretAccessKey: randomBytes(30).toString('base64').slice(0, 40),
      sessionToken: randomBytes(96).toString('base64'),
      roleArn,
      subject,
      sessionName,
      expiresAt: this.now() + durationMs,
    };
    this.sessions.set(accessKeyId, session);
    return { accessKeyId, secretAccessKey: session.secretAccessKey, sessionToken: session.sessionToken, expiresAt: session.expiresAt };
  }

  /** The secret of an access key that exists (what AWS signs a request's signature check with), else undefined. */
  secretOfKey(accessKeyId: string): string | undefined {
    const session = this.sessions.get(accessKeyId);
    if (session) return session.secretAccessKey;
    for (const u of this.users.values()) {
      const secret = u.keys.get(accessKeyId);
      if (secret !== undefined) return secret;
    }
    return undefined;
  }

  /** What ccoctl's `aws create-iam-roles` makes: a role trusting the ServiceAccounts, with the request's policy. */
  createRole(name: string, policy: StatementEntry[], trusted: string[]): string {
    const arn = `arn:aws:iam::${ACCOUNT_ID}:role/${name}`;
    this.roles.set(arn, { arn, policy: structuredClone(policy), trusted: [...trusted] });
    return arn;
  }

  deleteRole(arn: string): void {
    this.roles.delete(arn);
  }

  /**
   * Answers one call: returns when the credentials may do `action` on `resource`, throws the AwsError AWS
   * would answer otherwise (an unknown or deleted key, a role that does not trust the caller, an action
   * outside the policy). `via` is the API call that needs the permission when it is another action's
   * (RunInstances with tags needs ec2:CreateTags too, and its refusal is RunInstances').
   */
  authorize(creds: AwsCredentials | undefined, action: string, resource = '*', via = action): void {
    this.stats.calls++;
    try {
      const principal = this.check(creds, action, resource, via);
      let used = this.allowed.get(principal);
      if (!used) this.allowed.set(principal, (used = new Set()));
      used.add(action);
    } catch (e) {
      this.stats.refused++;
      if (e instanceof AwsError) {
        e.attempted = via;
        this.refusals.push({ action, code: e.code, message: e.message });
        if (this.refusals.length > 100) this.refusals.shift();
      }
      throw e;
    }
  }

  /** Returns the principal's name (a user's, or a role's ARN) when allowed. */
  private check(creds: AwsCredentials | undefined, action: string, resource: string, via: string): string {
    const op = operationOf(via);
    const service = serviceOf(via);
    if (!creds) throw new AwsError('NoCredentialProviders', op, 'no valid providers in chain: unable to locate credentials');
    let principal: string;
    let who: string;
    let policy: readonly StatementEntry[];
    const session = 'accessKeyId' in creds ? this.sessions.get(creds.accessKeyId) : undefined;
    if (session && 'accessKeyId' in creds) {
      // Temporary credentials: the session token must come with them, and they end at their expiry.
      if (creds.secretAccessKey !== session.secretAccessKey || creds.sessionToken !== session.sessionToken) {
        if (service === 'ec2') throw new AwsError('AuthFailure', op, 'AWS was not able to validate the provided access credentials');
        throw new AwsError('InvalidClientTokenId', op, 'The security token included in the request is invalid.');
      }
      if (this.now() >= session.expiresAt) {
        if (service === 'ec2') throw new AwsError('RequestExpired', op, 'Request has expired.');
        throw new AwsError('ExpiredToken', op, 'The security token included in the request is expired');
      }
      const role = this.roles.get(session.roleArn);
      if (!role) throw new AwsError('AuthFailure', op, 'AWS was not able to validate the provided access credentials');
      principal = `arn:aws:sts::${ACCOUNT_ID}:assumed-role/${role.arn.slice(role.arn.lastIndexOf('/') + 1)}/${session.sessionName}`;
      who = role.arn;
      policy = role.policy;
    } else if ('accessKeyId' in creds) {
      const user = this.userOfKey(creds.accessKeyId, creds.secretAccessKey);
      if (!user) {
        // EC2 says AuthFailure; the other services say the token is invalid.
        if (service === 'ec2') throw new AwsError('AuthFailure', op, 'AWS was not able to validate the provided access credentials');
        throw new AwsError('InvalidClientTokenId', op, 'The security token included in the request is invalid.');
      }
      principal = `arn:aws:iam::${ACCOUNT_ID}:user/${user.name}`;
      who = user.name;
      policy = user.policy ?? ALL;
    } else {
      const role = this.roles.get(creds.roleArn);
      const { serviceAccount, audience } = creds.webIdentity;
      if (!role || audience !== 'openshift' || !role.trusted.includes(serviceAccount))
        throw new AwsError('AccessDenied', 'AssumeRoleWithWebIdentity', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
      principal = `arn:aws:sts::${ACCOUNT_ID}:assumed-role/${role.arn.slice(role.arn.lastIndexOf('/') + 1)}/${serviceAccount}`;
      who = role.arn;
      policy = role.policy;
    }
    if (policyAllows(policy, action, resource)) return who;
    if (service === 'ec2')
      throw new AwsError(
        'UnauthorizedOperation',
        op,
        `You are not authorized to perform this operation. User: ${principal} is not authorized to perform: ${action} on resource: ${resource}`,
      );
    throw new AwsError('AccessDenied', op, `User: ${principal} is not authorized to perform: ${action} on resource: ${resource}`);
  }
}
