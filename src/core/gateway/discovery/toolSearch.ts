/**
 * A small, fast local search over the managed tools: BM25 over each tool's name (split at `_`, `-`,
 * `.` and camelCase), description, parameter names and source, with per-field weights (BM25F-style:
 * weighted term frequencies, one length normalisation). Built once per tool set; a query costs
 * O(query terms × tools containing them). Everything is bounded: the text read per tool, the query
 * length and the number of results.
 */

interface SearchDocument {
  name: string;
  description?: string;
  /** Top-level parameter names. */
  params?: string[];
  /** Where the tool comes from (an MCP server's label, "command tools"…). */
  group?: string;
}

interface SearchHit {
  name: string;
  score: number;
}

/** Field weights: a word in the name counts three times a word in the description. */
const WEIGHTS = { name: 3, params: 1.5, description: 1, group: 0.5 } as const;
const K1 = 1.2;
const B = 0.75;
/** Bonus when the query names the tool exactly (`check_inventory`, `checkInventory`, "check inventory"). */
const EXACT_NAME_BONUS = 10;

export const MAX_QUERY_CHARS = 500;
const MAX_QUERY_TERMS = 64;
export const MAX_RESULTS = 50;
const MAX_DESCRIPTION_CHARS = 2000;
const MAX_PARAMS = 64;

const STOPWORDS = new Set(
  'a an the of for to in on at by with and or is are be been was were it its this that these those from as into i me my we our you your all any can could would should will do does how what which who when where there then than so if not no yes please want need using use via some one'.split(
    ' ',
  ),
);

/** A light English stemmer: enough to match "orders"/"order", "listing"/"list", "created"/"create". */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  if (word.endsWith('ies') && word.length > 4) return word.slice(0, -3) + 'y';
  if (word.endsWith('sses')) return word.slice(0, -2);
  if (word.endsWith('ing') && word.length > 5) return trimDouble(word.slice(0, -3));
  if (word.endsWith('ed') && word.length > 4) return trimDouble(word.slice(0, -2).replace(/(at|iz|bl)$/, '$1e'));
  if (word.endsWith('es') && /(ss|x|ch|sh|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us') && !word.endsWith('is')) return word.slice(0, -1);
  return word;
}

function trimDouble(w: string): string {
  return /([^aeioulsz])\1$/.test(w) ? w.slice(0, -1) : w;
}

/** Words of an identifier or a text: split at non-alphanumerics and camelCase (`getS3Object` -> get s3 object); lower-cased. */
export function splitWords(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1 ')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Search terms: words, without stopwords, stemmed. */
export function tokenize(text: string): string[] {
  return splitWords(text)
    .filter((w) => !STOPWORDS.has(w))
    .map(stem);
}

interface Indexed {
  name: string;
  /** Weighted term frequencies. */
  tf: Map<string, number>;
  length: number;
  /** The name's words joined by one space, for the exact-name bonus. */
  nameKey: string;
}

export class ToolSearchIndex {
  private readonly docs: Indexed[] = [];
  private readonly postings = new Map<string, number[]>();
  private readonly avgLength: number;

  constructor(documents: readonly SearchDocument[]) {
    for (const d of documents) {
      const tf = new Map<string, number>();
      let length = 0;
      const add = (text: string | undefined, weight: number): void => {
        if (!text) return;
        for (const t of tokenize(text)) {
          tf.set(t, (tf.get(t) ?? 0) + weight);
          length += weight;
        }
      };
      add(d.name, WEIGHTS.name);
      add((d.description ?? '').slice(0, MAX_DESCRIPTION_CHARS), WEIGHTS.description);
      add((d.params ?? []).slice(0, MAX_PARAMS).join(' '), WEIGHTS.params);
      add(d.group, WEIGHTS.group);
      const index = this.docs.length;
      this.docs.push({ name: d.name, tf, length, nameKey: splitWords(d.name).join(' ') });
      for (const term of tf.keys()) {
        let list = this.postings.get(term);
        if (!list) this.postings.set(term, (list = []));
        list.push(index);
      }
    }
    this.avgLength = this.docs.reduce((n, d) => n + d.length, 0) / Math.max(1, this.docs.length) || 1;
  }

  get size(): number {
    return this.docs.length;
  }

  /** The best `limit` tools for the query, best first (ties by name); only tools that match a term. */
  search(query: string, limit = 10): SearchHit[] {
    const q = query.slice(0, MAX_QUERY_CHARS);
    const terms = [...new Set(tokenize(q))].slice(0, MAX_QUERY_TERMS);
    const n = Math.max(1, Math.min(MAX_RESULTS, Math.floor(limit) || 1));
    const scores = new Map<number, number>();
    const N = this.docs.length;
    for (const term of terms) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (N - list.length + 0.5) / (list.length + 0.5));
      for (const i of list) {
        const d = this.docs[i];
        const f = d.tf.get(term)!;
        const s = (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.length) / this.avgLength));
        scores.set(i, (scores.get(i) ?? 0) + s);
      }
    }
    const qKey = ` ${splitWords(q).join(' ')} `;
    for (const [i, s] of scores) {
      const key = this.docs[i].nameKey;
      if (key && qKey.includes(` ${key} `)) scores.set(i, s + EXACT_NAME_BONUS);
    }
    return [...scores]
      .map(([i, score]) => ({ name: this.docs[i].name, score: Math.round(score * 1000) / 1000 }))
      .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, n);
  }
}
