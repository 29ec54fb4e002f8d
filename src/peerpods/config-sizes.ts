/**
 * The pod VM sizes in peer-pods-cm: the default size and the allowed list, under the keys and with the
 * names of the cloud CLOUD_PROVIDER names (PODVM_INSTANCE_TYPE(S) on AWS, AZURE_INSTANCE_SIZE(S) on Azure,
 * GCP_MACHINE_TYPE on Google Cloud).
 */
import type { CloudProvider, Problem } from './clouds/provider.ts';
import { commaList, q } from './config-values.ts';

export interface SizeSettings {
  instanceType: string;
  instanceTypes: string[];
  allowedInstanceTypes: string[];
}

export function checkSizes(
  cloud: CloudProvider,
  value: (key: string) => string | undefined,
  problems: Problem[],
  warnings: Problem[],
): SizeSettings | undefined {
  const { defaultKey, listKey, noun, shape, pattern, table } = cloud.sizes;
  let ok = true;
  const unknown: string[] = [];
  const note = (name: string) => {
    if (cloud.sizes.warnUnknown && !table[name] && !unknown.includes(name)) unknown.push(name);
  };

  let instanceType = cloud.sizes.defaultSize;
  let typeOk = true;
  const it = value(defaultKey);
  if (it !== undefined && it !== '') {
    if (!pattern.test(it)) {
      typeOk = ok = false;
      problems.push({ key: defaultKey, message: `${defaultKey} is ${q(it)}: it is not ${shape}; set it to one` });
    } else instanceType = it;
  }
  let instanceTypes: string[] = [];
  const its = value(listKey);
  if (its !== undefined && its !== '') {
    const items = commaList(listKey, its, noun, cloud.sizes.listExample, problems);
    if (!items) ok = false;
    else {
      const bad = items.find((i) => !pattern.test(i));
      if (bad !== undefined) {
        ok = false;
        problems.push({
          key: listKey,
          message: `${listKey} is ${q(its)}: ${q(bad)} is not ${shape}; list ${noun}s, comma separated, without spaces`,
        });
      } else instanceTypes = items;
    }
  }
  if (typeOk && instanceTypes.length > 0 && !instanceTypes.includes(instanceType)) {
    if (cloud.sizes.defaultOutsideList === 'warning') {
      warnings.push({
        key: defaultKey,
        message: `${defaultKey} ${instanceType} is not in ${listKey} (${instanceTypes.join(',')}); pods may use it anyway, as the default`,
      });
    } else {
      ok = false;
      problems.push({
        key: listKey,
        message: `${listKey} is ${q(its ?? '')}: it leaves out the default ${noun} ${instanceType} (${defaultKey}${value(defaultKey) ? '' : ', its default'}); add ${instanceType} to the list, or set ${defaultKey} to one of the listed ${noun}s`,
      });
    }
  }
  if (!ok) return undefined;
  for (const name of [instanceType, ...instanceTypes]) note(name);
  if (unknown.length > 0) {
    const key = instanceTypes.some((t) => unknown.includes(t)) ? listKey : defaultKey;
    const one = unknown.length === 1;
    warnings.push({
      key,
      message: `${key} names ${unknown.join(', ')}, ${one ? `not ${/^[AEIOU]/.test(cloud.title) ? 'an' : 'a'} ${cloud.title} ${noun}` : `not ${cloud.title} ${noun}s`} osc knows the size of; check the spelling (best fit for a pod's vCPUs and memory never picks ${one ? 'it' : 'them'})`,
    });
  }
  const allowedInstanceTypes = [...instanceTypes];
  if (!allowedInstanceTypes.includes(instanceType)) allowedInstanceTypes.push(instanceType);
  return { instanceType, instanceTypes, allowedInstanceTypes };
}
