/** An error answered by the API server, with its HTTP status and the Status object's reason. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly body: unknown;
  constructor(status: number, reason: string, message: string, body?: unknown) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.body = body;
  }
}

const hasStatus = (e: unknown, status: number): boolean => e instanceof ApiError && e.status === status;
export const isNotFound = (e: unknown): boolean => hasStatus(e, 404);
export const isConflict = (e: unknown): boolean => hasStatus(e, 409);
export const isAlreadyExists = (e: unknown): boolean => e instanceof ApiError && e.status === 409 && e.reason === 'AlreadyExists';
export const isGone = (e: unknown): boolean => hasStatus(e, 410);
export const isForbidden = (e: unknown): boolean => hasStatus(e, 403);
export const isInvalid = (e: unknown): boolean => hasStatus(e, 422);

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
