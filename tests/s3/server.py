"""The S3 server of the object-storage tests: moto's, on 127.0.0.1, with SigV4 checked.

Started by the tests (crates/paracrypt-cli/tests/cli/s3.rs): it listens on a free port, makes
one IAM user whose key signs every request (moto then checks every signature: a wrong secret
is refused with SignatureDoesNotMatch, an unknown key with InvalidAccessKeyId), prints

    READY <port> <access key id> <secret access key>

and serves until its standard input closes, which happens when the test process ends however
it ends (a panic, a kill): the server never outlives the tests. Meanwhile each line on its
standard input is a JSON command of the tests' own, answered by one JSON line on its standard
output, done with boto3 through the server (what a test sets up or inspects, never what it
tests: paracrypt is the client under test): make a bucket, list a bucket's multipart uploads
or objects, copy an object to or from a local file, damage one byte of an object; and for
the KMS tests (moto serves AWS KMS on the same port): make a KMS key (with an alias), make
another IAM user whose policy denies some KMS actions.

Why moto (5.2.5, PyPI) and not s3s-fs (crates.io): both implement multipart uploads, ranged
GETs and conditional writes (If-None-Match on PutObject and on CompleteMultipartUpload) and
check signatures, but s3s-fs 0.14 answers ListMultipartUploads with NotImplemented (the tests
list the bucket's uploads after every fault to show none is left), answers ListParts of an
unknown upload with 200, says NoSuchKey for a missing bucket, and takes ~16 minutes of
compiling (4 CPU-minutes) to install where moto's pinned wheels take about a minute.
"""

import json
import os
import sys

# Every request but the first three (which make the IAM user below) must be signed by a key
# moto knows, with the right secret.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402


def main() -> None:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    url = f"http://127.0.0.1:{port}"
    iam = boto3.client(
        "iam",
        endpoint_url=url,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
        region_name="us-east-1",
    )
    iam.create_user(UserName="paracrypt-tests")
    iam.put_user_policy(
        UserName="paracrypt-tests",
        PolicyName="everything",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName="paracrypt-tests")["AccessKey"]
    s3 = boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
        region_name="us-east-1",
    )
    kms = boto3.client(
        "kms",
        endpoint_url=url,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
        region_name="us-east-1",
    )
    iam = boto3.client(
        "iam",
        endpoint_url=url,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
        region_name="us-east-1",
    )
    clients = {"s3": s3, "iam": iam, "kms": kms}
    print(f"READY {port} {key['AccessKeyId']} {key['SecretAccessKey']}", flush=True)
    # Serve commands until the test process closes our stdin (it ended).
    for line in sys.stdin:
        try:
            result = command(clients, json.loads(line))
            print(json.dumps({"ok": True, "result": result}), flush=True)
        except Exception as e:  # noqa: BLE001 - the test reads the message
            print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}), flush=True)
    server.stop()


def command(clients: dict, cmd: dict):
    s3 = clients["s3"]
    op = cmd["op"]
    if op == "kms_key":
        meta = clients["kms"].create_key()["KeyMetadata"]
        if cmd.get("alias"):
            clients["kms"].create_alias(AliasName=cmd["alias"], TargetKeyId=meta["KeyId"])
        return {"arn": meta["Arn"], "id": meta["KeyId"]}
    if op == "kms_user":
        # A user allowed everything but the KMS actions `deny` names.
        iam = clients["iam"]
        iam.create_user(UserName=cmd["name"])
        statements = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
        statements.append({"Effect": "Deny", "Action": cmd["deny"], "Resource": "*"})
        iam.put_user_policy(
            UserName=cmd["name"],
            PolicyName="kms",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )
        key = iam.create_access_key(UserName=cmd["name"])["AccessKey"]
        return [key["AccessKeyId"], key["SecretAccessKey"]]
    if op == "bucket":
        s3.create_bucket(Bucket=cmd["bucket"])
        return None
    if op == "uploads":
        uploads = s3.list_multipart_uploads(Bucket=cmd["bucket"]).get("Uploads", [])
        return [{"key": u["Key"], "id": u["UploadId"]} for u in uploads]
    if op == "objects":
        objects = s3.list_objects_v2(Bucket=cmd["bucket"]).get("Contents", [])
        return [{"key": o["Key"], "size": o["Size"]} for o in objects]
    if op == "get":
        body = s3.get_object(Bucket=cmd["bucket"], Key=cmd["key"])["Body"].read()
        with open(cmd["file"], "wb") as f:
            f.write(body)
        return len(body)
    if op == "put":
        with open(cmd["file"], "rb") as f:
            s3.put_object(Bucket=cmd["bucket"], Key=cmd["key"], Body=f.read())
        return None
    if op == "delete":
        listed = s3.list_objects_v2(Bucket=cmd["bucket"], Prefix=cmd["prefix"])
        for o in listed.get("Contents", []):
            s3.delete_object(Bucket=cmd["bucket"], Key=o["Key"])
        return None
    if op == "flip":
        body = bytearray(s3.get_object(Bucket=cmd["bucket"], Key=cmd["key"])["Body"].read())
        body[cmd["offset"]] ^= 0x01
        s3.put_object(Bucket=cmd["bucket"], Key=cmd["key"], Body=bytes(body))
        return None
    raise ValueError(f"unknown command {op}")


if __name__ == "__main__":
    main()
