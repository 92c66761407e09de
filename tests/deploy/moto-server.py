"""moto's server on loopback for `npm run test:deploy` (tests/deploy/moto-deploy.test.ts).

One adjustment, to a bug of moto 5.2: it takes a `List<…>` or `CommaDelimitedList` parameter's
*default* as one string (only values passed in are split), so `Fn::Join` of the VPC's subnet ids
spells them character by character. CloudFormation splits defaults too; so does this, nothing else.
"""
import sys

import moto.cloudformation.parsing as parsing
from moto.server import main

_load_parameters = parsing.ResourceMap.load_parameters


def load_parameters(self):
    _load_parameters(self)
    for name, slot in self._template.get("Parameters", {}).items():
        kind = slot.get("Type", "String")
        value = self.resolved_parameters.get(name)
        if isinstance(value, str) and (kind == "CommaDelimitedList" or kind.startswith("List<")):
            self.resolved_parameters[name] = value.split(",")
            # load_parameters has already copied the parameters where references find them.
            self._parsed_resources[name] = self.resolved_parameters[name]


parsing.ResourceMap.load_parameters = load_parameters

if __name__ == "__main__":
    main(["-H", "127.0.0.1", "-p", sys.argv[1]])
