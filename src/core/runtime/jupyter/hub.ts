/**
 * JupyterHub: a user's server lives at `HUB/user/NAME/` (a named one at `HUB/user/NAME/SERVER/`), behind
 * the hub's proxy. Two things go wrong there that a plain Jupyter server never shows:
 *   - The URL copied from the hub's pages is `HUB/hub/user/NAME/…`, the hub's own redirect page. It is
 *     rewritten to the server's URL, `HUB/user/NAME/`.
 *   - A stopped server: the proxy no longer routes `/user/NAME/` to it, so the hub answers itself. A POST
 *     (starting a kernel) gets 405 and an HTML page; a GET is redirected to `HUB/hub/user/NAME/…`, which
 *     answers 424 ("no longer running"). Both are recognised and told as what they are, with the page
 *     that starts the server.
 */

export interface HubUser {
  /** The user's name as in the URL (still percent-encoded). */
  name: string;
  /** A named server's name, when the URL is `/user/NAME/SERVER/`. */
  server?: string;
  /** `https://host/prefix/`: where the hub's pages are (`…hub/spawn/NAME`). */
  hubRoot: string;
}

/** `…/hub/user/NAME/…` → `…/user/NAME/…` (the path of a URL, without query). */
export function rewriteHubUserPath(pathname: string): string {
  return pathname.replace(/\/hub\/user\/([^/]+)(?=\/|$)/, '/user/$1');
}

/** The hub user a normalised base URL belongs to, when it has the shape `PREFIX/user/NAME/` or `PREFIX/user/NAME/SERVER/`. */
export function hubUserOf(baseUrl: string): HubUser | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined;
  }
  const m = /^(.*?\/)user\/([^/]+)\/(?:([^/]+)\/)?$/.exec(url.pathname);
  if (!m) return undefined;
  return { name: m[2], server: m[3], hubRoot: `${url.origin}${m[1]}` };
}

/** Where the hub starts this user's server. */
export function spawnUrl(user: HubUser): string {
  return `${user.hubRoot}hub/spawn/${user.name}${user.server ? `/${user.server}` : ''}`;
}

function displayName(user: HubUser): string {
  let name = user.name;
  try {
    name = decodeURIComponent(user.name);
  } catch {}
  return user.server ? `${name}'s server "${user.server}"` : `${name}'s server`;
}

/** The message for a stopped server: whose, and where to start it. */
export function stoppedMessage(user: HubUser): string {
  return `${displayName(user)} on the hub is not running; start it at ${spawnUrl(user)} (or with "Start My Server" on the hub's home page), then run the code again.`;
}

/** The message for a server stopped while code ran on it. */
export function stoppedWhileRunning(user: HubUser): string {
  return (
    `${displayName(user)} on the hub stopped while the code was running. The output that arrived is kept; the kernel and its variables are gone. ` +
    `Start the server at ${spawnUrl(user)}, then run the code again.`
  );
}

/**
 * True when an answer to a request under a user's server came from the hub itself because that server
 * is not running: 405 from the hub (its `X-JupyterHub-Version` header or page), a redirect to the hub's
 * `/hub/user/NAME/` page, or the hub's 424/503 "not running".
 */
export function isStoppedServerAnswer(user: HubUser, status: number, headers: { get(name: string): string | null }, detail: string): boolean {
  if (status === 405) return headers.get('x-jupyterhub-version') !== null || /jupyterhub/i.test(detail);
  if (status >= 300 && status < 400) {
    const location = headers.get('location') ?? '';
    let path = location;
    try {
      path = new URL(location, user.hubRoot).pathname;
    } catch {}
    return path.includes(`/hub/user/${user.name}/`);
  }
  // 503: the proxy still routes to a server that has gone ("Your server appears to be down").
  if (status === 424 || status === 503) return /(?:no longer|not) running|appears to be down|spawn/i.test(detail);
  return false;
}
