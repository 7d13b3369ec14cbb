"""Wire formats translated to and from signoff's types: MCP (the tools of MCP servers, and the
gateway), A2A, AG-UI. Each needs its extra; the core never imports them."""
