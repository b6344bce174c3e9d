"""The snippets whose Pygments output tests/fixtures/pygments.json keeps
(written by `pygments_export.py --fixtures`): every exported language, its
common syntax, and the edges (blank lines, unterminated strings, tabs,
non-ASCII)."""

CORPUS = []


def add(lang, code):
    CORPUS.append([lang, code])


add("python", 'def f(x):\n    return "a\'b" & 1 < 2\n')
add("py", '''import os
from typing import List

@decorator(arg=1)
class Foo(Bar, metaclass=Meta):
    """Docstring with 'quotes'."""
    x: int = 0x1F + 0o17 + 0b101 + 1_000 + 3.14e-10j

    async def run(self, *args, **kwargs) -> List[str]:
        # a comment
        s = f"value {self.x!r:>10} and {{braces}}"
        b = b'bytes' + rb"raw\\d"
        await something(lambda y: y ** 2)
        if x is not None and not y or z in w:
            raise ValueError("bad") from None
        return [i for i in range(10) if i % 2 == 0]
''')
add("python3", 'print("héllo wörld", end="")\nλ = 1\n_private = __dunder__\nTrue, False, None, self, cls\n')
add("py2", 'print "hello"\nexec "code"\nx = 0777L\n')
add("javascript", '''// comment
/* block */
const re = /ab+c/gi;
let s = `template ${a + b} end`;
function f(a, b = 2, ...rest) {
  if (a === null || b !== undefined) return new Map();
  return a => a * 2;
}
class A extends B { static #p = 1; get x() { return this.#p; } }
export default async function* gen() { yield await 0x10n; }
''')
add("js", 'var x = {"a": 1, \'b\': [true, false, null]};\nconsole.log(x?.a ?? 3);\n')
add("typescript", '''interface Point { x: number; y?: string }
type U = A | B & C;
enum Color { Red = 1, Green }
function id<T extends object>(arg: T): T { return arg as T; }
@Component({selector: 'app'})
export class X implements Y { private readonly z: Array<number> = []; }
''')
add("ts", 'let a: unknown = <any>b;\ndeclare module "m" { export const c: string; }\n')
add("jsx", 'const el = <div className="x" onClick={() => f(1)}>Hello {name}</div>;\n')
add("rust", '''use std::collections::HashMap;

/// Doc comment
#[derive(Debug, Clone)]
pub struct Point<'a, T: Copy> { x: &'a T, y: Option<Box<dyn Fn(i32) -> i32>> }

impl<T> Trait for Point<'_, T> where T: Copy {
    fn new(x: u8) -> Self {
        let mut v = vec![1u32, 2, 0xff_u8 as u32, 1e10 as u32];
        let s = r#"raw "str""#;
        let c = b'\\n';
        match x { 0..=9 => println!("{x:?}"), _ => unreachable!() }
        'outer: loop { break 'outer; }
        unsafe { std::ptr::null::<i32>() };
        Self { x, y: None }
    }
}
''')
add("rs", 'fn main() { let _ = async move { x.await? }; }\nmacro_rules! m { ($e:expr) => { $e }; }\n')
add("go", '''package main

import (
\t"fmt"
\t"strings"
)

type T struct { a int; b []string; c map[string]chan<- error }

func (t *T) Do(x ...interface{}) (int, error) {
\tdefer fmt.Println("done")
\tgo func() { select { case v := <-ch: _ = v; default: } }()
\ts := `raw
string`
\tr := 'x'
\treturn 0x1F + 07 + 1.5i, nil
}
''')
add("java", '''package com.example;

import java.util.*;

@Override
public final class Main<T extends Comparable<T>> implements Runnable {
    private static final long X = 100L;
    public static void main(String[] args) throws Exception {
        var list = new ArrayList<Integer>();
        char c = 'a';
        String s = "str\\n" + c + 1.5f + 0x1F;
        for (int i = 0; i < 10; i++) { list.add(i); }
        Runnable r = () -> System.out.println(s);
        String text = """
            block
            """;
    }
}
''')
add("c", '''#include <stdio.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))

typedef struct node { int value; struct node *next; } node_t;

static inline size_t count(const char *s, uint8_t n) {
    /* comment */
    size_t i = 0; // line comment
    while (*s++ != '\\0' && i < 0x10u) i++;
    return i + sizeof(int32_t) + 1.5e3f;
}

int main(void) { printf("%d\\n", MAX(1, 2)); goto end; end: return 0; }
''')
add("cpp", '''#include <vector>
#include "local.h"

namespace ns {
template <typename T>
class Foo : public Bar {
public:
    explicit Foo(std::vector<T> v) noexcept : v_(std::move(v)) {}
    virtual ~Foo() override = default;
    auto get() const -> const T& { return v_[0]; }
private:
    std::vector<T> v_;
    static constexpr int N = 42;
};
}  // namespace ns

int main() { auto p = std::make_unique<ns::Foo<int>>(nullptr); std::string s = R"(raw)"; return 0; }
''')
add("c++", 'std::cout << "hi" << std::endl;\nbool b = true && !false;\n')
add("csharp", '''using System;
namespace N {
    public class C : I {
        public async Task<int> M(string s = @"verbatim", int? n = null) {
            var x = $"interp {s}";
            return await Task.FromResult(n ?? 0);
        }
    }
}
''')
add("kotlin", 'fun main(args: Array<String>) {\n    val x: Int? = null\n    println("Hello, ${args[0]}!")\n    data class P(val a: Int)\n}\n')
add("dart", "void main() {\n  final list = <int>[1, 2, 3];\n  print('sum: ${list.reduce((a, b) => a + b)}');\n}\n")
add("bash", '''#!/bin/bash
set -euo pipefail
# comment
for f in *.txt; do
    echo "file: $f ${HOME} $(date +%s)" > /dev/null 2>&1
done
if [[ -n "$VAR" && $x -eq 1 ]]; then export A=1; fi
function greet() { local name=$1; printf '%s\\n' "$name"; }
cat <<END
heredoc $x
END
arr=(a b c); echo ${arr[@]} $((1 + 2))
''')
add("sh", 'ls -la | grep foo && cd ~ || exit 1\n')
add("shell", 'export PATH="$PATH:/usr/local/bin"\n')
add("sql", '''SELECT u.id, COUNT(*) AS n, 'it''s' AS s
FROM users u
LEFT JOIN messages m ON m.sender_id = u.id
WHERE u.active = TRUE AND u.created > '2020-01-01' -- comment
GROUP BY u.id HAVING n > 10 ORDER BY n DESC LIMIT 5;
/* block */ INSERT INTO t (a, b) VALUES (1, 2.5), (NULL, "x");
create table t (id integer primary key, name varchar(255) not null);
''')
add("html", '''<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <style>body { color: #fff; }</style>
  <script>var x = 1 < 2;</script>
</head>
<body class='main'><!-- comment --><p>Text &amp; more</p><br/></body>
</html>
''')
add("xml", '<?xml version="1.0"?>\n<root xmlns:a="urn:x"><a:b attr=\'1\'>text<![CDATA[ <raw> ]]></a:b><!-- c --></root>\n')
add("css", '''@import url("x.css");
@media (max-width: 600px) {
  body > .cls#id:hover::before, a[href^="http"] {
    color: #ff0000 !important;
    margin: 0 auto 1.5em -2px;
    background: rgba(0, 0, 0, 0.5) url(img.png) no-repeat;
    font-family: "Helvetica Neue", sans-serif;
  }
}
/* comment */
:root { --main-color: blue; width: calc(100% - 10px); }
''')
add("scss", '$color: red;\n@mixin m($a) { color: $a; }\n.a { &:hover { @include m($color); } .b { width: 10px * 2; } }\n')
add("tex", '''\\documentclass{article}
\\usepackage[utf8]{inputenc}
% comment
\\begin{document}
\\section{Intro} Some $x^2 + \\alpha$ text and $$\\int_0^1 f(x)\\,dx$$.
\\end{document}
''')
add("latex", '\\frac{a}{b} \\\\ \\textbf{bold} 12pt\n')
add("diff", '''diff --git a/f b/f
index 123..456 100644
--- a/f
+++ b/f
@@ -1,3 +1,3 @@
 context
-removed
+added
! changed
''')
add("toml", '[package]\nname = "natter"\nversion = "0.1.0"\n# comment\n[dependencies]\nserde = { version = "1", features = ["derive"] }\ndate = 1979-05-27T07:32:00Z\narr = [1, 2.5, true]\n')
add("ini", '; comment\n[section]\nkey = value\nother=1\n# hash comment\n')
add("haskell", 'module Main where\nimport Data.List (sort)\nmain :: IO ()\nmain = do\n  let xs = [1, 2, 3] :: [Int]\n  print $ map (\\x -> x * 2) xs -- comment\n')
add("erlang", '-module(m).\n-export([f/1]).\nf(X) when is_integer(X) -> X + 1;\nf(_) -> {error, "bad"}.\n')
add("r", 'x <- c(1, 2, 3)\nf <- function(a, b = TRUE) { if (a > 1) print("yes") else NULL }\n# comment\n')
add("ocaml", 'let rec fact n = if n = 0 then 1 else n * fact (n - 1)\ntype t = A | B of int\n(* comment *)\n')
add("clojure", '(defn greet [name]\n  (str "Hello, " name "!"))\n; comment\n(def m {:a 1 :b [1 2]})\n')
add("nginx", 'server {\n    listen 80;\n    server_name example.com;\n    location / { proxy_pass http://127.0.0.1:9991; }\n}\n')
add("graphql", 'query Q($id: ID!) {\n  user(id: $id) { name, ...F @include(if: true) }\n}\n# comment\n')
add("protobuf", 'syntax = "proto3";\npackage p;\nmessage M { int32 a = 1; repeated string b = 2; }\n')
add("powershell", '$x = Get-ChildItem -Path "C:\\" | Where-Object { $_.Length -gt 100 }\n# comment\nfunction F { param([string]$a) Write-Host $a }\n')
add("batch", '@echo off\nREM comment\nset X=1\nif "%X%"=="1" (echo yes) else (echo no)\n:label\ngoto :eof\n')
add("perl", 'use strict;\nmy @a = (1, 2);\nmy %h = (a => 1);\nprint "Hello $a[0]\\n" if $x =~ /ab+c/i;\nsub f { return shift; }\n')
add("python", 'x = 1\n\n\n\ny = 2\n')
add("python", '\n\nleading and trailing blank lines\n\n')
add("python", 'unterminated = "string\nnext = \'line\n')
add("javascript", 'if (a) {\n    // indented\n    return;\n}\n')
add("rust", '/* nested /* comment */ still */ fn x() {}\n')
add("c", 'int x = 0; /* 中文 */\n')
add("go", '// unicode: héllo 世界\nvar s = "世界"\n')
add("sql", "select * from \"quoted table\" where a like '%x%' and b between 1 and 2;\n")
add("bash", 'echo "unterminated\n')
add("html", '<div\n  class="multi"\n  id=x>\n</div>\n<p>unclosed\n')
add("css", 'a { color: red\n')
add("diff", '+only\n-lines\n')
add("json", '{\n  "name": "natter",\n  "nested": {"list": [1, -2.5e3, true, false, null], "esc": "a\\"b\\u00e9"},\n  "empty": {}\n}\n')
add("json", '// a comment\n/* block */ {"k" /* inline */ : "v", "x": tru, 0.1.2 }\n')
add("json", '["unterminated string\n')
add("json", '{"a": 1} / @ "b"\n')
add("json-object", '"key": "value", "n": 12\n')
add("docker", 'FROM rust:1.80 AS build\n# comment\nARG VERSION=1\nENV PATH=/usr/local/bin:$PATH\nRUN apt-get update && \\\n    apt-get install -y curl\nCOPY --from=build /src /app\nWORKDIR /app\nEXPOSE 8080\nCMD ["./natter", "--port", "8080"]\nENTRYPOINT ["/bin/sh", "-c"]\n')
add("dockerfile", 'from alpine\nrun echo "lower case" > /tmp/x\nLABEL a="b" \\\n      c="d"\nHEALTHCHECK CMD curl -f http://localhost/ || exit 1\n')
add("php", '$x = array_map(fn($v) => $v * 2, [1, 2, 3]);\necho strlen("héllo {$x[0]}") . PHP_EOL;\nfunction f(int $a): ?string { return null; }\n')
add("php", '<?php\nnamespace App;\nclass A extends B implements C {\n    public function __construct(private int $n = 0) {}\n    // comment\n    public static function make(): static { return new static(); }\n}\n$s = "interp ${name} and {$obj->prop}";\n?>\n<p>html</p>\n')
add("markdown", '# Title\n\nSome *emphasis*, **strong** and `code`.\n\n- item\n- [link](https://example.com)\n\n> quote\n\n```python\ndef f(x):\n    return x\n```\n\n```nosuchlanguage\nplain\n```\n\n```\nno language\n```\n')
add("md", '1. one\n2. two\n\n~~~json extra words\n{"a": 1}\n~~~\n\n---\n![image](x.png)\n')
add("make", '# comment\nCC ?= gcc\nCFLAGS := -O2 -Wall\nSRC = $(wildcard *.c)\n\nifeq ($(DEBUG),1)\n  CFLAGS += -g\nendif\n\n.PHONY: all clean\nall: app\n\napp: $(SRC:.c=.o)\n\t$(CC) $(CFLAGS) -o $@ $^\n\t@echo "built $@"\n\nclean:\n\trm -f *.o app\ninclude other.mk\ndefine LONG \\\n  continued\nendef\n')
add("makefile", 'x:\n\t# recipe comment\n\techo $(x)\n')
add("yaml", '''%YAML 1.2
%TAG !e! tag:example.com,2000:app/
---
# a mapping
name: natter
version: 1.0
enabled: true
nothing: ~
nested:
  key: value   # trailing comment
  deeper:
    list:
      - one
      - two: 2
        three: 3
      -   spaced
back: at the top
...
''')
add("yaml", '''- item
- - nested sequence
  - second
-
  key: in a sequence
- ? complex key
  : complex value
? |
  block key
: value
''')
add("YAML", '''literal: |
  line one
    indented more

  after a blank line
folded: >-
  folded text
  continues here
keep: |+
  kept

strip: >2
   two spaces of indentation, then one more
indicator: |1-
  one
next: after the block scalars
''')
add("yaml", '''base: &base
  adapter: postgres
  host: localhost
dev:
  <<: *base
  database: dev
tagged: !!str 123
custom: !e!thing value
local: !local {a: 1}
full: !<tag:yaml.org,2002:int> 42
set: !!set {? a, ? b}
''')
add("yaml", '''single: 'it''s quoted'
double: "tab\\t, newline\\n, unicode \\u00e9 and \\x41"
multi: "first line
  continued line"
flow_seq: [a, b, 'c', "d", [nested, list], {k: v}]
flow_map: { one: 1, two: [2, 2], "three": 3 }
empty_seq: []
empty_map: {}
plain multi word: a plain scalar
  that continues
url: http://example.com:8080/path?q=1#frag
time: 12:30:00
''')
add("yaml", '''---
first: document
---
second: document
--- !!map
third: 3
...
# only a comment
--- |
  a block scalar document
''')
add("yaml", '''key:
	tab indented
bad: [unclosed
  sequence
other: "unclosed
''')
add("yaml", '''outer:
    inner:
        deepest: 1
  misaligned: 2
 less: 3
top: 4
list:
- a
-    b
    c
''')
add("yaml", '''script:
  - |
    echo "hello"
    if [ -f x ]; then
      cat x
    fi
  - >
    folded
    lines

    with a blank line
  - plain
env: {HOME: /root, PATH: "/bin:/usr/bin"}
matrix:
  include:
    - os: ubuntu-latest  # comment
      rust: [stable, nightly]
''')
add("ruby", '''# frozen_string_literal: true
require 'json'

module Natter::Chat
  class Message < Base
    attr_reader :id, :content
    @@count = 0

    def initialize(id, content = "", **opts)
      @id = id
      @content = content.strip
      $stderr.puts "new #{self.class.name} #{id}" if opts[:verbose]
    end

    def self.parse(text) = new(0, text)

    def to_s
      format('%05d: %s', @id, @content[0..10])
    end

    def <=>(other)
      id <=> other.id
    end
  end
end

x = [1, 2.5, 0x1F, 0b101, 0o17, 1_000, :sym, :"quoted sym", nil, true]
h = { key: 'value', "str" => 42, sym: :other }
x.each_with_index { |v, i| puts "#{i}: #{v}" unless v.nil? }
case x.first
when Integer then puts 'int'
when /ab+c/i then puts $~[0]
else raise ArgumentError, "bad"
end
''')
add("rb", '''text = <<~HEREDOC
  indented #{interpolated} heredoc
  second line
HEREDOC
raw = <<-'RAW'
    no #{interpolation} here
    RAW
a, b = <<ONE, <<TWO
first
ONE
second
TWO
call(<<~A.strip, 1)
  arg
A
missing = <<NEVER
this heredoc never ends
''')
add("ruby", '''w = %w[one two three]
s = %Q{braces {nested} #{x}}
q = %q(parens (nested) #{not})
r = %r{^/path/(\\d+)$}i
i = %i<a b>
o = %(plain #{interp} string)
x = %x`ls -la`
bang = %!bang #{string}!
pipe = %r|a|b|x
re = /line #{re} regex/m
c = ?a + ?\\n
=begin
block comment
=end
__END__
data after end
''')
add("ruby", '''str = "unterminated #{open
s = %Q[#{[1, [2]].map { |x| "#{x}" }}]
def method_missing(name, *args, &block) = super
puts(<<~EOS)
EOS
''')
