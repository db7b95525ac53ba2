"""Expand infra/sam/template.yaml with the SAM translator (what `sam deploy`
does server-side) and print how many CloudFormation resources it becomes.

Used by `make lint-infra`, offline: the CodeUri paths are replaced with
placeholder S3 URIs (as `sam package` would), managed policies are not
looked up, and the region is a placeholder.
"""
import os
import sys

from samtranslator.public.translator import ManagedPolicyLoader
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies(ManagedPolicyLoader):
    def __init__(self):
        pass

    def load(self):
        return {}


def main(path):
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(path) as f:
        template = yaml_parse(f.read())
    for name, res in template.get("Resources", {}).items():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Serverless::Function" and "CodeUri" in props:
            props["CodeUri"] = "s3://xjob-placeholder/" + name + ".zip"
    out = transform(template, {}, NoManagedPolicies())
    print("SAM transform: %d CloudFormation resources" % len(out["Resources"]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "infra/sam/template.yaml")
