/**
 * The dev cluster's Azure tenant, as far as who may do what goes (docs/devcluster.md): service principals
 * with client secrets (what `az ad sp create-for-rbac` makes, and the cluster's own in
 * kube-system/azure-credentials), user-assigned managed identities with federated credentials (what
 * `ccoctl azure create-managed-identities` makes for a Manual-mode cluster), the roles assigned to each on
 * the subscription, and the one question every simulated call asks: may this caller perform this action?
 * Sign-in refusals are Entra ID's (AADSTS codes), authorization refusals ARM's (AuthorizationFailed).
 */
import { randomBytes, randomUUID } from 'node:crypto';

/**
 * Built-in roles, as Azure defines them (actions, and what they exclude), as far as peer pods touch them.
 * Contributor may do everything but grant access; Reader only reads; Virtual Machine Contributor manages
 * VMs, their disks and NICs and may join networks, but not galleries or storage accounts; Network
 * Contributor manages networking only.
 */
export const AZURE_BUILTIN_ROLES: Record<string, { actions: string[]; notActions: string[] }> = {
  Owner: { actions: ['*'], notActions: [] },
  Contributor: {
    actions: ['*'],
    notActions: [
      'Microsoft.Authorization/*/Delete',
      'Microsoft.Authorization/*/Write',
      'Microsoft.Authorization/elevateAccess/Action',
      'Microsoft.Blueprint/blueprintAssignments/write',
      'Microsoft.Blueprint/blueprintAssignments/delete',
    ],
  },
  Reader: { actions: ['*/read'], notActions: [] },
  'User Access Administrator': { actions: ['*/read', 'Microsoft.Authorization/*'], notActions: [] },
  'Virtual Machine Contributor': {
    actions: [
      'Microsoft.Authorization/*/read',
      'Microsoft.Compute/availabilitySets/*',
      'Microsoft.Compute/locations/*',
      'Microsoft.Compute/virtualMachines/*',
      'Microsoft.Compute/virtualMachineScaleSets/*',
      'Microsoft.Compute/disks/write',
      'Microsoft.Compute/disks/read',
      'Microsoft.Compute/disks/delete',
      'Microsoft.Network/networkInterfaces/*',
      'Microsoft.Network/networkSecurityGroups/join/action',
      'Microsoft.Network/networkSecurityGroups/read',
      'Microsoft.Network/publicIPAddresses/join/action',
      'Microsoft.Network/publicIPAddresses/read',
      'Microsoft.Network/virtualNetworks/read',
      'Microsoft.Network/virtualNetworks/subnets/join/action',
      'Microsoft.Resources/subscriptions/resourceGroups/read',
      'Microsoft.Storage/storageAccounts/listKeys/action',
      'Microsoft.Storage/storageAccounts/read',
    ],
    notActions: [],
  },
  'Network Contributor': {
    actions: ['Microsoft.Authorization/*/read', 'Microsoft.Network/*', 'Microsoft.Resources/subscriptions/resourceGroups/read'],
    notActions: [],
  },
};

/** What an Azure SDK presents: a client secret, or a federated token (a ServiceAccount token) for a workload identity. */
export type AzureCaller =
  | { tenantId: string; clientId: string; clientSecret: string }
  | { tenantId: string; clientId: string; federatedToken: { serviceAccount: string; audience: string } };

interface Principal {
  clientId: string;
  /** Service principals have one; managed identities none. */
  clientSecret?: string;
  /** Role names (built-in, or custom ones of `customRoles`) assigned on the subscription. */
  roles: string[];
  /** A managed identity's federated credentials: `system:serviceaccount:<ns>:<name>` subjects, audience `openshift`. */
  federated?: { subject: string; audience: string }[];
  name: string;
}

/** An authorization refusal: the caller, the action and ARM's message. */
export class AzureAuthError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

const glob = (pattern: string, value: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i').test(value);

export class AzureTenant {
  readonly tenantId = randomUUID();
  private readonly principals = new Map<string, Principal>();
  /** Custom roles (ccoctl makes one per request with permissions): name -> actions. */
  private readonly customRoles = new Map<string, string[]>();
  /** The actions each principal (client ID) was allowed: what the simulated paths really use. */
  readonly allowed = new Map<string, Set<string>>();
  readonly stats = { signIns: 0, refused: 0 };

  /** `az ad sp create-for-rbac --role <role> --scopes /subscriptions/<id>`. */
  createServicePrincipal(roles: string[], name = 'peerpods'): { clientId: string; clientSecret: string; tenantId: string } {
    const sp = { clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url'), roles: [...roles], name };
    this.principals.set(sp.clientId, sp);
    return { clientId: sp.clientId, clientSecret: sp.clientSecret, tenantId: this.tenantId };
  }

  /** `az ad sp credential reset`: a new secret, the old one refused from then on. */
  resetSecret(clientId: string): string {
    const p = this.principals.get(clientId);
    if (!p?.clientSecret) throw new Error(`no service principal ${clientId}`);
    p.clientSecret = randomBytes(24).toString('base64url');
    return p.clientSecret;
  }

  /** A user-assigned managed identity with federated credentials (what ccoctl makes); answers its client ID. */
  createManagedIdentity(name: string, roles: string[], subjects: string[]): string {
    const clientId = randomUUID();
    this.principals.set(clientId, {
      clientId,
      roles: [...roles],
      name,
      federated: subjects.map((subject) => ({ subject, audience: 'openshift' })),
    });
    return clientId;
  }

  /** A custom role of these permissions (assignable on the subscription); answers its name. */
  createCustomRole(name: string, actions: string[]): string {
    this.customRoles.set(name, [...actions]);
    return name;
  }

  /** The audiences a managed identity's federated credentials accept (undefined: no such identity, or no federated credential). */
  federatedAudiences(clientId: string): string[] | undefined {
    const f = this.principals.get(clientId)?.federated;
    return f ? [...new Set(f.map((x) => x.audience))] : undefined;
  }

  deletePrincipal(clientId: string): void {
    this.principals.delete(clientId);
  }

  setRoles(clientId: string, roles: string[]): void {
    const p = this.principals.get(clientId);
    if (p) p.roles = [...roles];
  }

  rolesOf(clientId: string): string[] | undefined {
    return this.principals.get(clientId)?.roles;
  }

  principalNames(): string[] {
    return [...this.principals.values()].map((p) => p.name);
  }

  /**
   * Entra ID's sign-in: the principal's client ID, or its refusal as the SDK reports it (an unknown tenant
   * or application, a wrong secret, a token the identity does not trust).
   */
  signIn(caller: AzureCaller): { clientId: string } | { error: string; code: number; status: number; description: string } {
    this.stats.signIns++;
    const refuse = (error: string, code: number, status: number, description: string) => {
      this.stats.refused++;
      return { error, code, status, description };
    };
    if (caller.tenantId.toLowerCase() !== this.tenantId)
      return refuse(
        'invalid_request',
        90002,
        400,
        `AADSTS90002: Tenant '${caller.tenantId}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
      );
    const p = this.principals.get(caller.clientId);
    if (!p)
      return refuse(
        'unauthorized_client',
        700016,
        400,
        `AADSTS700016: Application with identifier '${caller.clientId}' was not found in the directory '${this.tenantId}'.`,
      );
    if ('clientSecret' in caller) {
      if (!p.clientSecret || p.clientSecret !== caller.clientSecret)
        return refuse(
          'invalid_client',
          7000215,
          401,
          `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${caller.clientId}'.`,
        );
      return { clientId: p.clientId };
    }
    const { serviceAccount, audience } = caller.federatedToken;
    if (!p.federated?.some((f) => f.subject === serviceAccount && f.audience === audience))
      return refuse(
        'invalid_request',
        70021,
        400,
        `AADSTS70021: No matching federated identity record found for presented assertion subject '${serviceAccount}'. Please note that the matching is done using a case-sensitive comparison. Check your federated identity credential Subject, Audience and Issuer against the presented assertion.`,
      );
    return { clientId: p.clientId };
  }

  /** Whether the principal's roles allow `action`. */
  allows(clientId: string, action: string): boolean {
    const p = this.principals.get(clientId);
    if (!p) return false;
    return p.roles.some((r) => {
      const builtin = AZURE_BUILTIN_ROLES[r];
      const actions = builtin?.actions ?? this.customRoles.get(r) ?? [];
      const not = builtin?.notActions ?? [];
      return actions.some((a) => glob(a, action)) && !not.some((a) => glob(a, action));
    });
  }

  /** One ARM call: returns when allowed, throws ARM's AuthorizationFailed otherwise. */
  authorize(clientId: string, action: string, scope: string): void {
    if (this.allows(clientId, action)) {
      let used = this.allowed.get(clientId);
      if (!used) this.allowed.set(clientId, (used = new Set()));
      used.add(action);
      return;
    }
    this.stats.refused++;
    throw new AzureAuthError(
      'AuthorizationFailed',
      403,
      `The client '${clientId}' with object id '${clientId}' does not have authorization to perform action '${action}' over scope '${scope}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
    );
  }

  /** Signs in and authorizes, answering the error the Azure SDK for Go gives a program (the adaptor), or undefined. */
  check(caller: AzureCaller | undefined, action: string, method: string, scope: string): string | undefined {
    if (!caller)
      return 'DefaultAzureCredential: failed to acquire a token.\nAttempted credentials:\n\tEnvironmentCredential: missing environment variable AZURE_TENANT_ID';
    const who = this.signIn(caller);
    const kind = 'clientSecret' in caller ? 'ClientSecretCredential' : 'WorkloadIdentityCredential';
    if ('error' in who) return `${kind}: authentication failed: ${who.description}`;
    try {
      this.authorize(who.clientId, action, scope);
      return undefined;
    } catch (e) {
      if (!(e instanceof AzureAuthError)) throw e;
      return `${method} https://management.azure.com${scope}\nRESPONSE ${e.status}: ${e.status} Forbidden\nERROR CODE: ${e.code}\n${e.message}`;
    }
  }
}
