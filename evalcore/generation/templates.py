# TEMPORARY stand-in (lead's local testing only; the helper's file replaces it)
from __future__ import annotations
import hashlib
from dataclasses import dataclass
@dataclass(frozen=True)
class Template:
    name: str; skill: str; language: str; description: str; text: str; source: str
    @property
    def sha256(self): return hashlib.sha256(self.text.encode()).hexdigest()
    @property
    def short_hash(self): return self.sha256[:12]
    def render(self, context, grounding, speakers=None):
        sys = "SYSTEM " + repr(grounding)
        out = [{"role": "system", "content": sys}]
        n = len(context)
        for i, t in enumerate(context):
            out.append({"role": "user" if (n - 1 - i) % 2 == 0 else "assistant", "content": t})
        return out
def shipped(): return [Template("chitchat-zh","chitchat","zh","d","x","shipped")]
def resolve(spec, skill, language): return Template(f"{skill}-{language}", skill or "chitchat", language or "zh", "d", f"{skill}{language}", "shipped")
