/** The --help text; its list of steps comes from the one list in src/steps/index.ts. */
import { STEP_GROUPS } from '../engine/step.js';
import { STEPS } from '../steps/index.js';

export const HELP = `sno-relocate: makes a single-node OpenShift cluster become the cluster of the site it is plugged into

Usage:
  sno-relocate validate [PATH]        check a site-config (file, or a folder holding site-config.yaml, or
                                      config media holding cluster-configuration/manifest.json)
  sno-relocate validate --translate [PATH]
                                      print the native site-config it becomes (-o yaml|json)
  sno-relocate plan     [PATH]        print what run would change, changing nothing (-o json|yaml|text)
  sno-relocate run      [PATH]        apply it: node steps, kubelet, cluster steps, health
  sno-relocate status                 progress and result of the last run, and watcher findings (-o json|text)
  sno-relocate watch                  companion watcher: OLM, Cluster API, on-cluster layering, operators
  sno-relocate watch --once           one sync, print the findings (-o json|text); exit 1 when one is an error
  sno-relocate gate     [PATH]        before kubelet at boot: close the kubelet gate while a new site-config waits
  sno-relocate keygen --out NAME      a signing key pair: NAME.key (private, 0600) and NAME.pub
  sno-relocate sign --key NAME.key [--not-after DATE] [--bind-machine-id ID | --bind-serial SERIAL] FOLDER
                                      write FOLDER/site-config.sig over the site-config and every file it names
  sno-relocate render --inventory FILE --template DIR --out DIR [--key NAME.key [--not-after DATE]] [--iso]
                      [--hub-objects DIR [--placement NAMESPACE/NAME]]
                                      one signed site folder (and ISO image) per inventory row, each validated
  sno-relocate credentials --site DIR --key CLIENT-CA.key --out FILE [--user NAME]
                                      the site's admin kubeconfig, signed by its client CA (-o json|text)
  sno-relocate fleet status --kubeconfigs DIR [--concurrency N] [--timeout SECONDS]
                                      each cluster's SiteRelocation, read concurrently (-o json|text)
  sno-relocate factory prepare [--image REF] [--trust DIR]
                                      on the installed node: br-ex's install address becomes the internal IP;
                                      preconditions checked, MachineConfigs applied (each reboot shown)
  sno-relocate factory prepare --manifests DIR --install-config FILE --internal-ip CIDR
                                      before installation: the MachineConfigs for the installer's manifests,
                                      the install subnet recorded in them for the node's first boot
  sno-relocate factory check [--shelf-days N]
                                      fit to ship? cluster, agent, gate, trust, certificates on arrival (-o json|text)
  sno-relocate factory seal [--shelf-days N] [--power-off]
                                      check, then the shipping state: state cleared, gate closed, shipment recorded
  sno-relocate --version | --help

Steps, in order (for --only and --skip; groups: ${STEP_GROUPS.join(', ')}):
${STEP_GROUPS.map(
  (g) =>
    `  ${`${g}:`.padEnd(9)}${STEPS.filter((s) => s.group === g)
      .map((s) => s.name)
      .join(', ')}`,
).join('\n')}

Options:
  --root DIR            resolve every host path under DIR (default /)
  --state-dir DIR       state folder (default /var/lib/sno-relocate)
  --kubeconfig FILE     cluster access (default: the node's localhost kubeconfig, then $KUBECONFIG)
  --only LIST           run or plan only these steps or groups (comma separated)
  --skip LIST           leave out these steps or groups
  --wait SECONDS        with no PATH, wait this long for a site-config to appear (default 0)
  --health-timeout SEC  how long the health step waits for a healthy cluster (default 600)
  --health-stable SEC   how long the cluster must stay settled before health calls it done (default 120)
  --console DEVICE      where the one-line progress banner goes (default /dev/console under systemd)
  -o, --output FORMAT   text, json or yaml (plan, validate); text or json (status, watch --once)
  --log-level LEVEL     trace, debug, info, warn, error (default info)
  --log-format FORMAT   text or json (default text)

With no PATH, run looks for /etc/sno-relocate/site-config.yaml, then a filesystem labelled
cluster-config or relocation-config holding a site-config.yaml or an image-based install's
cluster-configuration/manifest.json.

Exit codes: 0 done or nothing to do; 1 a step failed (the next run resumes); 2 usage error or invalid
site-config (nothing changed); 3 refused: untrusted site-config or conflicting host state.
`;
