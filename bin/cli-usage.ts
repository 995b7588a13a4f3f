// Owns what each command accepts, read from the help text (bin/cli-help.ts) so that help and parser cannot disagree,
// and the checks of a command line against it: options in our words, unknown commands and options with "did you mean".
import { parseArgs } from 'node:util';
import { closest } from '../config/suggest.js';
import { OPTIONS, UsageError, type CliOptionValues } from './cli-common.js';
import { entries } from './cli-help.js';

/** Options every command takes (HELP's "Global options"). */
export const GLOBAL_OPTIONS: readonly string[] = ['config', 'data-dir', 'help', 'version'];

/** One command as HELP lists it: its words (`queue retry`) and every option its usage and text name. */
export interface CommandSpec {
  words: string[];
  options: ReadonlySet<string>;
  /** How many arguments the usage names after the words (`queue show ID`: 1); more are refused. */
  positionals: number;
  usage: string;
}

/**
 * Counts the arguments a usage names after its command words: every placeholder that is not an option's value
 * (`--account H`: H is the option's). `[--json]` closes its group, so it takes no value; `|` separates choices;
 * `operator|--account H` is one argument or the option.
 */
function countPositionals(tokens: string[]): number {
  let count = 0;
  let value = false;
  for (const raw of tokens) {
    if (raw === '|') continue;
    const closes = /[\])]$/.test(raw);
    const token = raw.replace(/[[\]()]/g, '');
    if (token.startsWith('--')) value = !closes;
    else if (value) value = false;
    else {
      count++;
      value = token.includes('|--') && !closes;
    }
  }
  return count;
}

/**
 * Every command of HELP, one per word sequence: `suppressions import|export` is two. The words are the usage's leading
 * lower-case words (`queue retry ID` → queue retry); the options, every `--name` its entry names.
 */
export function commandSpecs(): CommandSpec[] {
  const out: CommandSpec[] = [];
  for (const e of entries()) {
    const lead: string[] = [];
    const tokens = e.usage.split(/\s+/);
    for (const token of tokens) {
      if (!/^[a-z][a-z-]*(\|[a-z][a-z-]*)*$/.test(token)) break;
      lead.push(token);
    }
    const positionals = countPositionals(tokens.slice(lead.length));
    const options = new Set([...`${e.usage} ${e.text}`.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1] as string));
    let words: string[][] = [[]];
    for (const token of lead) words = words.flatMap((w) => token.split('|').map((alt) => [...w, alt]));
    for (const w of words) out.push({ words: w, options, positionals, usage: e.usage });
  }
  return out;
}

/** The option as written on the command line (`--json`, `-h`), for messages. */
const written = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`);

/** A parsed command line: its options (only OPTIONS', each of its type) and its words. */
export interface CommandLine {
  values: CliOptionValues;
  positionals: string[];
  /** The names of the options given, in order (`help` for -h). */
  given: string[];
}

/**
 * Parses `argv` against OPTIONS; every problem is a UsageError in our words (node:util's own messages name its API):
 * an unknown option (with the closest known one), a missing value, a value given to a flag, an option given twice.
 */
export function parseCommandLine(argv: string[]): CommandLine {
  const { values, positionals, tokens } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const given: string[] = [];
  const names = Object.keys(OPTIONS);
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = (OPTIONS as Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>)[token.name];
    if (!spec) {
      // A long option's closest (a single letter is too short to guess from).
      const best = token.rawName.startsWith('--') ? closest(token.name, names) : undefined;
      throw new UsageError(`unknown option ${token.rawName}${best ? ` (did you mean ${written(best)}?)` : ''}`);
    }
    if (spec.type === 'string') {
      if (token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
      // `--config --json` would take "--json" as the file: a value that starts with "-" is given as --config=-x.
      if (!token.inlineValue && token.value.startsWith('-')) {
        throw new UsageError(`${token.rawName} needs a value, not the option ${token.value} (a value that starts with "-": ${token.rawName}=${token.value})`);
      }
    } else if (token.inlineValue) {
      throw new UsageError(`${token.rawName} takes no value`);
    }
    // The second would silently win over the first.
    if (given.includes(token.name) && !spec.multiple) throw new UsageError(`${token.rawName} is given twice`);
    given.push(token.name);
  }
  return { values: values as CliOptionValues, positionals, given };
}

/**
 * Checks the command words and the options given against HELP: an unknown command, or one a close misspelling of a
 * known one, is refused with its name; an option the command does not take is refused with the ones it does. A
 * command group's unknown subcommand with no close match is left to the command's own usage line.
 */
export function checkCommand(positionals: string[], given: string[]): void {
  const [command, sub] = positionals;
  if (command === undefined) {
    const own = given.find((o) => !GLOBAL_OPTIONS.includes(o));
    if (own !== undefined) throw new UsageError(`${written(own)} is an option of a command: sluice <command> ${written(own)}`);
    return;
  }
  const specs = commandSpecs();
  const mine = specs.filter((s) => s.words[0] === command);
  if (mine.length === 0) {
    const best = closest(command, [...new Set(specs.map((s) => s.words[0] as string))]);
    throw new UsageError(`unknown command "${command}"${best ? ` (did you mean ${best}?)` : ''}`);
  }
  let matching = mine.filter((s) => s.words.length === 1);
  let name = command;
  if (matching.length === 0) {
    matching = mine.filter((s) => s.words[1] === sub);
    if (matching.length === 0) {
      const best = sub === undefined ? undefined : closest(sub, mine.map((s) => s.words[1] as string));
      if (best) throw new UsageError(`unknown command "${command} ${sub}" (did you mean ${command} ${best}?)`);
      return;
    }
    name = `${command} ${sub}`;
  }
  // A word the command does not take would be ignored: refused (`sluice help queue retry` names a command).
  const extra = command === 'help' ? undefined : positionals[Math.max(...matching.map((s) => s.words.length + s.positionals))];
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}": usage: sluice ${matching[0]?.usage ?? name}`);
  const accepted = new Set([...GLOBAL_OPTIONS, ...matching.flatMap((s) => [...s.options])]);
  for (const option of given) {
    if (accepted.has(option)) continue;
    const own = [...accepted].filter((o) => !GLOBAL_OPTIONS.includes(o));
    const best = closest(option, own);
    const takes = own.length === 0 ? 'it takes no options of its own' : `it takes ${own.map(written).join(', ')}`;
    throw new UsageError(`${written(option)} is not an option of sluice ${name}${best ? ` (did you mean ${written(best)}?)` : ''}; ${takes}`);
  }
}
