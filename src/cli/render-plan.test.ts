import { describe, expect, it } from 'vitest';
import { renderPlan, type ShownPlan } from './render-plan.js';

const render = (steps: ShownPlan[]) =>
  renderPlan({ site: 'store-0042', siteConfig: 'site-config.yaml', steps }, 'text');
const line = (text: string, start: string) => text.split('\n').find((l) => l.startsWith(start));
const deferred = (step: ShownPlan['step']): ShownPlan => ({
  step,
  action: 'deferred',
  reason: 'cannot be planned here: the API does not answer',
});
const apiserverChange: ShownPlan = {
  step: 'proxy',
  action: 'change',
  summary: "the site's proxy",
  changes: [{ action: 'update', target: 'Proxy cluster', rollouts: ['kube-apiserver'] }],
};

describe('the plan as text', () => {
  it('says rollouts and the factory kubeconfig are unknown until the API answers while their steps are deferred', () => {
    const text = render([
      { step: 'ssh-keys', action: 'noop', reason: 'in place' },
      deferred('domain'),
      deferred('access'),
    ]);
    expect(line(text, 'Control-plane rollouts')).toBe(
      'Control-plane rollouts and reboots this run causes: unknown until the API answers (deferred: domain, access)',
    );
    expect(line(text, 'Factory admin kubeconfig')).toBe(
      'Factory admin kubeconfig: unknown until the API answers (access is deferred)',
    );
  });

  it('names what is planned so far beside what is unknown, and says none only when every cluster step was planned', () => {
    const partial = render([apiserverChange, deferred('mirrors')]);
    expect(line(partial, 'Control-plane rollouts')).toMatch(
      /^Control-plane rollouts and reboots this run causes: unknown until the API answers \(deferred: mirrors\); planned so far: 1 kube-apiserver revision/,
    );
    expect(line(partial, 'Factory admin kubeconfig')).toBeUndefined();
    // node steps deferred (a workstation without systemd) roll nothing out
    const planned = render([deferred('hostname'), { step: 'mirrors', action: 'noop', reason: 'in place' }]);
    expect(line(planned, 'Control-plane rollouts')).toBe('Control-plane rollouts and reboots this run causes: none');
  });
});
