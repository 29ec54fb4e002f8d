/**
 * Kubernetes resource quantities (`500m`, `2`, `1Gi`, `512Mi`, `1G`, `1e3`, `.5`, `1.5Gi` ...), parsed
 * exactly with BigInt. The grammar is the one of k8s.io/apimachinery/pkg/api/resource:
 *
 *   <quantity> ::= <sign><number><suffix>
 *   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei          (binary, powers of 1024)
 *                | n | u | m | "" | k | M | G | T | P | E   (decimal SI)
 *                | e<signed integer> | E<signed integer>   (decimal exponent)
 *
 * Values are returned in nano-units (10^-9 of the base unit: cores for CPU, bytes for memory), rounded up
 * like Kubernetes rounds sub-nano precision up, so `500m` CPU is 500_000_000n and `1Ki` is 1024_000_000_000n.
 */

export class QuantityError extends Error {}

const NANO = 1_000_000_000n;
const MIB = 1024n * 1024n;

const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/** Largest decimal exponent accepted (Kubernetes quantities top out far below this). */
const MAX_EXPONENT = 100;

/** `a / b` rounded towards +infinity, for b > 0. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b > 0n ? q + 1n : q;
}

/**
 * Parses a quantity into nano-units, rounded up. Throws QuantityError with a readable reason when the text
 * is not a Kubernetes quantity.
 */
export function parseQuantity(text: string): bigint {
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/.exec(text);
  if (!m) throw new QuantityError(`${JSON.stringify(text)} is not a quantity (expected a number with an optional unit, like 500m, 2, 1Gi)`);
  const sign = m[1] === '-' ? -1n : 1n;
  const num = m[2] ?? '';
  const suffix = m[3] ?? '';

  let exp10 = 0;
  let exp2 = 0;
  if (suffix in BINARY_SUFFIX) exp2 = BINARY_SUFFIX[suffix] ?? 0;
  else if (suffix in DECIMAL_SUFFIX) exp10 = DECIMAL_SUFFIX[suffix] ?? 0;
  else if (/^[eE][+-]?\d+$/.test(suffix)) {
    exp10 = Number(suffix.slice(1));
    if (Math.abs(exp10) > MAX_EXPONENT) throw new QuantityError(`${JSON.stringify(text)} is out of range`);
  } else {
    throw new QuantityError(
      `${JSON.stringify(text)} has an unknown unit ${JSON.stringify(suffix)} (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)`,
    );
  }

  const dot = num.indexOf('.');
  const intPart = dot < 0 ? num : num.slice(0, dot);
  const fracPart = dot < 0 ? '' : num.slice(dot + 1);
  const digits = BigInt((intPart + fracPart).replace(/^0+(?=\d)/, '') || '0');
  // value = digits * 10^(exp10 - frac) * 2^exp2, in nano-units: * 10^9
  const shift = 9 + exp10 - fracPart.length;
  let numerator = digits * 2n ** BigInt(exp2);
  let denominator = 1n;
  if (shift >= 0) numerator *= 10n ** BigInt(shift);
  else denominator = 10n ** BigInt(-shift);
  return sign * ceilDiv(numerator, denominator);
}

/** Nano-units to whole base units, rounded up (CPU: 1500m → 2 vCPUs). */
export function toWholeUnits(nano: bigint): bigint {
  return ceilDiv(nano, NANO);
}

/** Nano-units to milli-units, rounded up (CPU: 0.5 → 500). */
export function toMilli(nano: bigint): bigint {
  return ceilDiv(nano, 1_000_000n);
}

/** Nano-bytes to MiB, rounded up (memory: 1G → 954 MiB, 1Gi → 1024 MiB). */
export function toMiB(nano: bigint): bigint {
  return ceilDiv(nano, NANO * MIB);
}

/** True when the text is a valid quantity. */
export function isQuantity(text: string): boolean {
  try {
    parseQuantity(text);
    return true;
  } catch {
    return false;
  }
}
