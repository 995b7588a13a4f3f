// Checks that the README's table of contents lists every section (each `## ` heading outside code, in order) and
// that each of its links leads to a heading (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens).
import fs from 'node:fs';
import t from 'tap';

const readme = fs.readFileSync('README.md', 'utf8');

/** The anchor GitHub gives a heading. */
const anchor = (heading: string) => heading.trim().toLowerCase().replaceAll('`', '').replace(/[^\w\- ]/g, '').replaceAll(' ', '-');

/** Every `## ` heading outside fenced code, in order, but the contents' own. */
function sections(): string[] {
  const out: string[] = [];
  let fence = false;
  for (const line of readme.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    else if (!fence && line.startsWith('## ') && line !== '## Contents') out.push(line.slice(3));
  }
  return out;
}

t.test('the contents list every section, in order, with working links', async (t) => {
  const start = readme.indexOf('## Contents\n');
  t.ok(start > 0 && start < readme.indexOf('## Quick start\n'), 'the contents come first');
  const block = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const listed = [...block.matchAll(/^- \[(.+)\]\(#([^)]+)\)$/gm)].map((m) => ({ title: m[1] as string, link: m[2] as string }));
  t.same(listed.map((l) => l.title), sections(), 'every ## section, in order (a new section adds its line)');
  const anchors = new Set(readme.split('\n').filter((l) => /^#{1,4} /.test(l)).map((l) => anchor(l.replace(/^#+ /, ''))));
  for (const l of listed) t.ok(anchors.has(l.link), `#${l.link} is a heading's anchor`);
});
