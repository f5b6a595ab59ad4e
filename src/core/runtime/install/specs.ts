/**
 * The package specs `install_packages` accepts: requirement strings a person can read in full on the
 * approval card, and nothing pip could take for something else. Each is a project name (PEP 508: letters,
 * digits, `.`, `_`, `-`), optional extras in brackets, and optional version clauses (`==1.2`, `>=2,<3`,
 * `~=1.4`). Refused, with what to do: a spec starting with `-` (it would be an option to pip: `--index-url`,
 * `-r file`, `-e path`), whitespace (a second argument, or an environment marker whose quoting a person
 * misreads), URLs and paths (`name @ https://…`, `./pkg`, `git+…`: code from anywhere, past the index the user
 * chose), and anything else outside that alphabet. Local and offline sources are the trusted setting's job
 * (`codeact.python.installArgs`, e.g. `--no-index --find-links DIR`), never the model's.
 *
 * pip reads a requirement as a file when it looks like a path (`_looks_like_path`: a slash, or a leading
 * `.`), when it names an archive (`is_archive_file`: `.whl`, `.zip`, `.tar.gz`, `.tgz`, … in any case, also
 * before extras or a version clause: "foo.whl[x]", "foo==1.whl"), or when it is a URL (`scheme:`). All of
 * these are refused, as is any character outside ASCII (a look-alike of `/`, `.` or `:` that a person reads
 * as a name). The installer also runs in an empty private folder (pipRun.ts), so that no relative name can
 * resolve to a file the code made.
 */

const MAX_SPECS = 20;
const MAX_SPEC_CHARS = 200;

const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?';
const EXTRAS = `\\[${NAME}(?:,${NAME}){0,15}\\]`;
const VERSION = '[A-Za-z0-9.*+!_-]{1,60}';
const CLAUSE = `(?:===|==|~=|!=|>=|<=|<|>)${VERSION}`;
/** What pip's `is_archive_file` takes for a local archive (pip's ARCHIVE_EXTENSIONS), where pip looks for it. */
const ARCHIVE = /\.(?:whl|zip|tar|tgz|tbz|txz|tlz|tar\.gz|tar\.bz2|tar\.xz|tar\.lz|tar\.lzma)(?=$|[[\]=<>!~,])/i;

/** Linear: every part is a bounded, unambiguous run of its own alphabet. */
const SPEC = new RegExp(`^${NAME}(?:${EXTRAS})?(?:${CLAUSE}(?:,${CLAUSE}){0,9})?$`);

interface SpecCheck {
  specs: string[];
  /** The first problem, said so the code can fix it (no spec is installed when there is one). */
  error?: string;
}

/** Checks what the code passed; any problem refuses the whole call (nothing is half-installed). */
export function checkSpecs(value: unknown): SpecCheck {
  if (!Array.isArray(value)) return { specs: [], error: 'install_packages(packages): pass a list of requirement strings such as ["pandas>=2"].' };
  if (value.length === 0) return { specs: [], error: 'install_packages(packages): the list is empty; name at least one package.' };
  if (value.length > MAX_SPECS)
    return { specs: [], error: `install_packages(packages): ${value.length} packages in one call; at most ${MAX_SPECS}. Install them in several calls.` };
  const specs: string[] = [];
  for (const v of value) {
    if (typeof v !== 'string') return { specs: [], error: 'install_packages(packages): every package must be a string such as "pandas>=2".' };
    const problem = specProblem(v);
    if (problem) return { specs: [], error: `install_packages: ${JSON.stringify(v.slice(0, MAX_SPEC_CHARS))} is refused: ${problem}` };
    if (!specs.includes(v)) specs.push(v);
  }
  return { specs };
}

function specProblem(spec: string): string | undefined {
  if (!spec.length || spec.length > MAX_SPEC_CHARS) return `a spec has 1 to ${MAX_SPEC_CHARS} characters.`;
  if (spec.startsWith('-'))
    return 'it starts with "-", so pip would read it as an option. Pass package names only; install options are the user\'s setting codeact.python.installArgs.';
  if (/[^\x00-\x7f]/.test(spec))
    return 'it holds a character outside ASCII (a look-alike of "/", "." or ":" reads as a name but is not one). Spell the package name in plain letters, digits, ".", "_" and "-".';
  if (/\s/.test(spec)) return 'it holds whitespace. Pass one requirement per item, without environment markers ("name>=1.2", not "name >= 1.2").';
  if (/[:/\\@]|^\./.test(spec))
    return 'URLs, paths and "name @ url" are not installed from code. Name a package on the index ("name==1.2"); a local wheel folder is the user\'s setting codeact.python.installArgs (["--no-index", "--find-links", "/path/wheels"]).';
  if (ARCHIVE.test(spec))
    return 'it ends like an archive or wheel file (.whl, .zip, .tar.gz, …), which pip would install from a file of that name. Name a package on the index ("name==1.2"); a local wheel folder is the user\'s setting codeact.python.installArgs (["--no-index", "--find-links", "/path/wheels"]).';
  if (!SPEC.test(spec)) return 'it is not a requirement of the form name, name==1.2, name>=2,<3 or name[extra]>=1 (letters, digits, ".", "_", "-").';
  return undefined;
}
