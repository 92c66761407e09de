/**
 * Evaluates the condition `name` of a CloudFormation template's `Conditions` as CloudFormation
 * does (`Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, and `Condition`: in a packaged template's
 * JSON, or `Fn::Condition` as the short tag `!Condition` parses). `operand` gives an operand of
 * `Fn::Equals` its value: a literal as it is, a `Ref` to a parameter resolved by the caller.
 */
export function stackCondition(
  conditions: Readonly<Record<string, unknown>>,
  name: string,
  operand: (value: unknown) => unknown,
): boolean {
  const evaluate = (expression: unknown): boolean => {
    const [fn, args] = Object.entries(expression as Record<string, unknown>)[0]!;
    const list = args as unknown[];
    if (fn === 'Fn::Equals') return operand(list[0]) === operand(list[1]);
    if (fn === 'Fn::Not') return !evaluate(list[0]);
    if (fn === 'Fn::And') return list.every(evaluate);
    if (fn === 'Fn::Or') return list.some(evaluate);
    if (fn === 'Condition' || fn === 'Fn::Condition')
      return stackCondition(conditions, args as string, operand);
    throw new Error(`condition function ${fn}`);
  };
  if (!conditions[name]) throw new Error(`the template has no condition ${name}`);
  return evaluate(conditions[name]);
}
