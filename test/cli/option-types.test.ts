/**
 * Options typed by the compiler: each handler sees exactly the options its command declares
 * (commands/options.ts), typed from the option table, so a handler that reads an option its command
 * does not take fails `tsc -p .` (the `@ts-expect-error` lines below), as the command line refuses it
 * at run time. A number option reaches its handler as a number, read once by the command line: a value
 * that is not a whole number within its bounds is a usage error (exit 2) naming the flag.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { parseCommandLine } from '../../src/cli/args.js';
import { ExitCode } from '../../src/base/errors.js';
import type { credentialsCommand } from '../../src/cli/commands/credentials.js';
import type { factoryCommand } from '../../src/cli/commands/factory.js';
import type { fleetCommand } from '../../src/cli/commands/fleet.js';
import type { gateCommand } from '../../src/cli/commands/gate.js';
import type { keygenCommand } from '../../src/cli/commands/keygen.js';
import type { OptionsOf } from '../../src/cli/commands/options.js';
import type { planCommand } from '../../src/cli/commands/plan.js';
import type { renderCommand } from '../../src/cli/commands/render.js';
import type { runCommand } from '../../src/cli/commands/run.js';
import type { signCommand } from '../../src/cli/commands/sign.js';
import type { statusCommand } from '../../src/cli/commands/status.js';
import type { supportBundleCommand } from '../../src/cli/commands/support-bundle.js';
import type { validateCommand } from '../../src/cli/commands/validate.js';
import type { watchCommand } from '../../src/cli/commands/watch.js';

/** what a handler receives as its options */
type FlagsOf<Handler extends (inv: never) => unknown> = Parameters<Handler>[0]['flags'];

describe('options typed by the compiler', () => {
  it("each handler receives exactly its command's declared options", () => {
    expectTypeOf<keyof FlagsOf<typeof validateCommand>>().toEqualTypeOf<OptionsOf<'validate'>>();
    expectTypeOf<keyof FlagsOf<typeof planCommand>>().toEqualTypeOf<OptionsOf<'plan'>>();
    expectTypeOf<keyof FlagsOf<typeof runCommand>>().toEqualTypeOf<OptionsOf<'run'>>();
    expectTypeOf<keyof FlagsOf<typeof statusCommand>>().toEqualTypeOf<OptionsOf<'status'>>();
    expectTypeOf<keyof FlagsOf<typeof supportBundleCommand>>().toEqualTypeOf<OptionsOf<'support-bundle'>>();
    expectTypeOf<keyof FlagsOf<typeof watchCommand>>().toEqualTypeOf<OptionsOf<'watch'>>();
    expectTypeOf<keyof FlagsOf<typeof gateCommand>>().toEqualTypeOf<OptionsOf<'gate'>>();
    expectTypeOf<keyof FlagsOf<typeof keygenCommand>>().toEqualTypeOf<OptionsOf<'keygen'>>();
    expectTypeOf<keyof FlagsOf<typeof signCommand>>().toEqualTypeOf<OptionsOf<'sign'>>();
    expectTypeOf<keyof FlagsOf<typeof renderCommand>>().toEqualTypeOf<OptionsOf<'render'>>();
    expectTypeOf<keyof FlagsOf<typeof credentialsCommand>>().toEqualTypeOf<OptionsOf<'credentials'>>();
    expectTypeOf<keyof FlagsOf<typeof fleetCommand>>().toEqualTypeOf<OptionsOf<'fleet status'>>();
    expectTypeOf<keyof FlagsOf<typeof factoryCommand>>().toEqualTypeOf<
      OptionsOf<'factory prepare' | 'factory check' | 'factory seal'>
    >();
  });

  it('values are typed from their declaration: a string, a switch a boolean, a default always set', () => {
    expectTypeOf<FlagsOf<typeof watchCommand>['once']>().toEqualTypeOf<boolean>();
    expectTypeOf<FlagsOf<typeof runCommand>['root']>().toEqualTypeOf<string>();
    expectTypeOf<FlagsOf<typeof runCommand>['kubeconfig']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<FlagsOf<typeof runCommand>['wait']>().toEqualTypeOf<number>();
    expectTypeOf<FlagsOf<typeof runCommand>['health-timeout']>().toEqualTypeOf<number>();
    expectTypeOf<FlagsOf<typeof fleetCommand>['concurrency']>().toEqualTypeOf<number>();
    expectTypeOf<FlagsOf<typeof signCommand>['generation']>().toEqualTypeOf<number | undefined>();
  });

  it('a number option arrives as a number, given or by default', () => {
    expect(parseCommandLine(['run', '--wait', '900', '--health-timeout=60']).flags).toMatchObject({
      wait: 900,
      'health-timeout': 60,
      'health-stable': 120,
    });
    expect(parseCommandLine(['plan']).flags).toMatchObject({ wait: 0, 'health-stable': 120 });
    expect(parseCommandLine(['fleet', 'status', '--concurrency', '4']).flags).toMatchObject({
      concurrency: 4,
      timeout: 5,
    });
    expect(parseCommandLine(['factory', 'check', '--shelf-days', '3650']).flags['shelf-days']).toBe(3650);
    expect(parseCommandLine(['sign', '--generation', '7', 'dir']).flags.generation).toBe(7);
    expect(parseCommandLine(['sign', 'dir']).flags.generation).toBeUndefined();
  });

  it.each([
    [['run', '--wait', 'abc'], '--wait: expected a whole number of seconds, 0 or more, got "abc"'],
    [['run', '--wait=-5'], '--wait: expected a whole number of seconds, 0 or more, got "-5"'],
    [['run', '--wait', '-5'], "Option '--wait' argument is ambiguous"],
    [['plan', '--health-timeout', '1.5'], '--health-timeout: expected a whole number of seconds, 0 or more, got "1.5"'],
    [['run', '--health-stable', ''], '--health-stable: expected a whole number of seconds, 0 or more, got ""'],
    [['fleet', 'status', '--concurrency', '0'], '--concurrency: expected a whole number, 1 or more, got "0"'],
    [['fleet', 'status', '--timeout', '1e3'], '--timeout: expected a whole number of seconds, 1 or more, got "1e3"'],
    [
      ['factory', 'seal', '--shelf-days', '3651'],
      '--shelf-days: expected a whole number of days, 0 to 3650, got "3651"',
    ],
    [['sign', '--generation', '0', 'dir'], '--generation: expected a whole number, 1 or more, got "0"'],
  ])('a bad number %j is a usage error naming the flag', (argv, message) => {
    let refused: unknown;
    try {
      parseCommandLine(argv);
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ exitCode: ExitCode.usage });
    expect((refused as Error).message).toContain(message);
  });

  it('an option a command does not take is a compile error in its handler and a usage error on its command line', () => {
    const handlers = [
      // @ts-expect-error keygen takes --out only: its handler cannot read --root
      (flags: FlagsOf<typeof keygenCommand>) => flags.root,
      // @ts-expect-error run takes no --output (plan does)
      (flags: FlagsOf<typeof runCommand>) => flags.output,
      // @ts-expect-error a misspelt option is no option at all
      (flags: FlagsOf<typeof planCommand>) => flags['health-timout'],
      (flags: FlagsOf<typeof keygenCommand>) => flags.out,
    ];
    expect(handlers).toHaveLength(4);
    expect(() => parseCommandLine(['keygen', '--root', '/'])).toThrow(
      "keygen does not take --root; run 'sno-relocate keygen --help' for its options",
    );
    expect(() => parseCommandLine(['run', '--output', 'json'])).toThrow(
      "run does not take --output; run 'sno-relocate run --help' for its options",
    );
    expect(() => parseCommandLine(['plan', '--health-timout', '5'])).toThrow(
      "plan has no option --health-timout; run 'sno-relocate plan --help' for its options",
    );
  });
});
