// Writes tests/fixtures/katex.json: [tex, display, HTML or null] for a
// corpus of formulas, rendered by KaTeX's own renderToString (null where
// KaTeX throws: Zulip then shows the tex-error span). The version is the
// one the katex crate embeds.
//
//   cd /tmp/katexjs && npm install katex@0.16.4
//   NODE_PATH=/tmp/katexjs/node_modules node scripts/katex_fixtures.js
const fs = require("fs");
const path = require("path");
const katex = require("katex");
require("katex/contrib/mhchem");

if (katex.version !== "0.16.4") throw new Error(`KaTeX 0.16.4 is pinned; found ${katex.version}`);

const corpus = [
  ["x", false], ["x^2", false], ["x^2", true], ["\\frac{a}{b}", false],
  ["\\frac{a}{b}", true], ["\\sqrt{2}", false], ["\\sum_{i=1}^n i", true],
  ["\\int_0^1 f(x)\\,dx", true], ["e^{i\\pi} + 1 = 0", false],
  ["\\alpha\\beta\\gamma", false], ["\\mathbb{R}", false],
  ["\\begin{pmatrix}1 & 0\\\\0 & 1\\end{pmatrix}", true],
  ["\\text{hello } x", false], ["a'b", false], ["x \\approx 500\\$", false],
  ["\\ce{H2O}", false], ["\\left( \\frac{1}{2} \\right)", false],
  ["\\operatorname{sin} x", false], ["a < b > c & d", false],
  ["\\lim_{x \\to \\infty} \\frac{1}{x}", true], ["\\overline{abc}", false],
  ["\\binom{n}{k}", false], ["\\color{red} x", false], ["a\nb", true],
  ["\\frac{", false], ["\\error{**a**}", false], ["\\error{**a**}", true],
  ["a'b\"c", true], ["}", false], ["\\begin{matrix}", true],
  ["x_", false], ["\\<script>", false], ["\\def\\a{\\a}\\a", false],
];

const out = corpus.map(([tex, display]) => {
  try {
    return [tex, display, katex.renderToString(tex, { displayMode: display })];
  } catch (e) {
    return [tex, display, null];
  }
});
const file = path.join(__dirname, "..", "tests", "fixtures", "katex.json");
fs.writeFileSync(file, JSON.stringify(out, null, 0).replace(/\],\[/g, "],\n[") + "\n");
